// Counters of the HTTP layer itself, appended to the engine's Prometheus text at /metrics:
//   tessera:http_requests_total{route, status}   counter (fixed label sets: no unbounded series)
//   tessera:http_open_connections                 gauge
//   tessera:http_active_streams                   gauge (SSE responses in progress)
//   tessera:http_client_disconnects_total         counter (requests aborted by a closed client)
// Lock-free; every method may be called from any thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "router.hpp"

namespace tessera::http {

class HttpMetrics {
 public:
  // route: nullptr-equivalent kOther for unmatched paths.
  void count_request(const Route* route, unsigned status) noexcept;
  void connection_opened() noexcept { open_connections_.fetch_add(1, std::memory_order_relaxed); }
  void connection_closed() noexcept { open_connections_.fetch_sub(1, std::memory_order_relaxed); }
  void stream_started() noexcept { active_streams_.fetch_add(1, std::memory_order_relaxed); }
  void stream_ended() noexcept { active_streams_.fetch_sub(1, std::memory_order_relaxed); }
  void client_disconnected() noexcept { disconnects_.fetch_add(1, std::memory_order_relaxed); }

  [[nodiscard]] std::int64_t open_connections() const noexcept {
    return open_connections_.load(std::memory_order_relaxed);
  }
  [[nodiscard]] std::int64_t active_streams() const noexcept {
    return active_streams_.load(std::memory_order_relaxed);
  }

  // Prometheus text exposition (# HELP / # TYPE lines included), model_name label on each.
  [[nodiscard]] std::string exposition(const std::string& model_name) const;

 private:
  static constexpr std::array<unsigned, 12> kStatuses{200, 400, 401, 404, 405, 413,
                                                      429, 431, 500, 501, 503, 0 /*other*/};
  static constexpr std::size_t kRoutes = 11;  // every Route + "other"
  std::array<std::array<std::atomic<std::uint64_t>, kStatuses.size()>, kRoutes> requests_{};
  std::atomic<std::int64_t> open_connections_{0};
  std::atomic<std::int64_t> active_streams_{0};
  std::atomic<std::uint64_t> disconnects_{0};
};

[[nodiscard]] const char* route_label(const Route* route) noexcept;

}  // namespace tessera::http
