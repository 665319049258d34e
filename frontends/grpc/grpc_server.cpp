#include "grpc_server.hpp"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>

#include <algorithm>
#include <chrono>
#include <fstream>

namespace tessera::grpcfe {

namespace {

// Linking grpc++_reflection registers its builder plugin for every ServerBuilder in the process
// (a static initializer), so "reflection = false" has to take it out again per server.
class WithoutReflection final : public grpc::ServerBuilderOption {
 public:
  void UpdateArguments(grpc::ChannelArguments* /*args*/) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) override {
    std::erase_if(*plugins, [](const auto& p) { return p->name() == "proto_server_reflection"; });
  }
};

}  // namespace

GrpcServer::~GrpcServer() {
  stop_watcher();
  if (server_) {
    server_->Shutdown(std::chrono::system_clock::now());
    server_->Wait();
  }
}

ts_status GrpcServer::start(const ts_engine_api* engine) noexcept {
  return sdk::guarded([&]() -> ts_status {
    if (engine == nullptr) return sdk::fail(TS_ERR_INVALID_ARGUMENT, "start: engine is NULL");
    if (server_) return sdk::fail(TS_ERR_INVALID_ARGUMENT, "start: already started");
    service_ = std::make_unique<GenerationService>(engine, options_);
    // Both are process-wide grpc++ switches read when a ServerBuilder is made.
    grpc::EnableDefaultHealthCheckService(true);
    if (options_.reflection) grpc::reflection::InitProtoReflectionServerBuilderPlugin();
    grpc::ServerBuilder builder;
    if (!options_.reflection) builder.SetOption(std::make_unique<WithoutReflection>());
    int port = 0;
    builder.AddListeningPort(options_.listen, grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    if (!server_ || port == 0) {
      server_.reset();
      return sdk::fail(TS_ERR_INTERNAL, "grpc: cannot listen on " + options_.listen);
    }
    server_->GetHealthCheckService()->SetServingStatus(
        false);  // loading until the watcher sees ready
    if (!options_.port_file.empty()) {
      std::ofstream(options_.port_file) << port << "\n";
    }
    log_.info("gRPC (tessera.v1.Generation, grpc.health.v1" +
              std::string(options_.reflection ? ", reflection" : "") + ") on port " +
              std::to_string(port));
    watcher_ = std::thread([this] { watch_health(); });
    return sdk::ok();
  });
}

void GrpcServer::watch_health() {
  // The engine table has no state-change callback: poll it (cheap: an atomic read behind it).
  int last = -1;
  std::unique_lock lock(watcher_mutex_);
  while (!watcher_stop_) {
    const int serving = service_->serving() ? 1 : 0;
    if (serving != last) {
      server_->GetHealthCheckService()->SetServingStatus(serving == 1);
      last = serving;
    }
    watcher_wake_.wait_for(lock, std::chrono::milliseconds(50));
  }
}

void GrpcServer::stop_watcher() {
  {
    const std::lock_guard lock(watcher_mutex_);
    watcher_stop_ = true;
  }
  watcher_wake_.notify_all();
  if (watcher_.joinable()) watcher_.join();
}

ts_status GrpcServer::stop(std::int64_t deadline_ms) noexcept {
  return sdk::guarded([&]() -> ts_status {
    if (!server_) return sdk::ok();
    service_->set_draining();
    stop_watcher();
    server_->GetHealthCheckService()->SetServingStatus(false);
    // Shutdown(deadline): no new calls; in-flight ones may finish until the deadline, then are
    // cancelled (their handlers abort the engine request and return). It returns once every
    // handler has returned, so no engine call is made afterwards.
    server_->Shutdown(std::chrono::system_clock::now() +
                      std::chrono::milliseconds(std::max<std::int64_t>(deadline_ms, 0)));
    server_->Wait();
    server_.reset();
    return sdk::ok();
  });
}

}  // namespace tessera::grpcfe
