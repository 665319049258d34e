// tessera.v1.Generation on grpc++'s synchronous API: each Generate runs on a grpc++ thread that
// submits to the engine and relays its events (JSON, docs/http.md "The engine table as frontends
// see it") as GenerateResponse chunks. A client cancel, a deadline or Abort aborts the engine
// request; the handler still waits for the engine's final "done" event before returning, so no
// callback ever reaches a freed call.
//
// With an api_key, every call of this service needs `authorization: Bearer <key>` metadata
// (UNAUTHENTICATED otherwise); grpc.health.v1 and reflection are other services and stay open.
// Running requests are registered under their owner (the key when there is one, else the
// connection), so Abort reaches only the caller's own requests.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "grpc_options.hpp"
#include "tessera.grpc.pb.h"
#include "tessera/plugin_abi.h"

namespace tessera::grpcfe {

class GenerationService final : public tessera::v1::Generation::Service {
 public:
  GenerationService(const ts_engine_api* engine, GrpcOptions options)
      : engine_(engine), options_(std::move(options)) {}

  grpc::Status Generate(grpc::ServerContext* context, const tessera::v1::GenerateRequest* request,
                        grpc::ServerWriter<tessera::v1::GenerateResponse>* writer) override;
  grpc::Status Abort(grpc::ServerContext* context, const tessera::v1::AbortRequest* request,
                     tessera::v1::AbortResponse* response) override;
  grpc::Status GetModelInfo(grpc::ServerContext* context,
                            const tessera::v1::GetModelInfoRequest* request,
                            tessera::v1::GetModelInfoResponse* response) override;
  grpc::Status GetTokenizer(grpc::ServerContext* context,
                            const tessera::v1::GetTokenizerRequest* request,
                            tessera::v1::GetTokenizerResponse* response) override;

  // Refuse new Generate calls (UNAVAILABLE) from now on.
  void set_draining() noexcept { draining_.store(true); }
  [[nodiscard]] bool draining() const noexcept { return draining_.load(); }
  // True when the engine is ready and we are not draining (drives grpc.health.v1).
  [[nodiscard]] bool serving() const noexcept;

 private:
  // OK, or UNAUTHENTICATED when a key is configured and the call does not carry it.
  [[nodiscard]] grpc::Status check_key(const grpc::ServerContext& context) const;
  // The key of running_ for request `id` made by the caller of `context`.
  [[nodiscard]] std::string running_key(const grpc::ServerContext& context,
                                        const std::string& id) const;
  void unregister_running(const std::string& key);

  const ts_engine_api* engine_;
  GrpcOptions options_;
  std::atomic<bool> draining_{false};
  std::mutex running_mutex_;
  std::map<std::string, std::uint64_t> running_;  // running_key -> engine request id
};

}  // namespace tessera::grpcfe
