// The "grpc" frontend instance: a grpc++ server with tessera.v1.Generation, grpc.health.v1.Health
// (grpc++'s default health service, SERVING only while the engine is ready and we are not
// draining; a watcher thread follows the engine's state) and, as an option, server reflection.
#pragma once

#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "generation_service.hpp"
#include "grpc_options.hpp"
#include "tessera/plugin_sdk.hpp"

namespace tessera::grpcfe {

class GrpcServer {
 public:
  GrpcServer(GrpcOptions options, const ts_host_api* host)
      : options_(std::move(options)), log_(host, "grpc") {}
  ~GrpcServer();
  GrpcServer(const GrpcServer&) = delete;
  GrpcServer& operator=(const GrpcServer&) = delete;

  ts_status start(const ts_engine_api* engine) noexcept;
  ts_status stop(std::int64_t deadline_ms) noexcept;

 private:
  void watch_health();
  void stop_watcher();

  GrpcOptions options_;
  sdk::Logger log_;
  std::unique_ptr<GenerationService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::thread watcher_;
  std::mutex watcher_mutex_;
  std::condition_variable watcher_wake_;
  bool watcher_stop_ = false;
};

}  // namespace tessera::grpcfe
