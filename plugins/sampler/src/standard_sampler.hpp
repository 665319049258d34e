// The "standard" sampler instance: a batch of independent rows spread over the host's compute
// threads (option threads = 0, the default) or over a RowPool of its own, each thread with its
// own scratch. Thread-safety: sample() may be called from any thread; calls on one
// instance are serialised by a mutex (the engine samples once per step from one thread).
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "row_pool.hpp"
#include "row_sampler.hpp"
#include "sampler_options.hpp"
#include "tessera/plugin_abi.h"
#include "tessera/plugin_sdk.hpp"

namespace tessera::sampler {

inline constexpr const char* kPluginName = "standard";

class StandardSampler {
 public:
  StandardSampler(const ts_host_api* host, const SamplerOptions& options);

  // The ts_sampler_table::sample contract (and sample_scanned's with scans: [n_rows] or NULL, and
  // sample_grouped's with groups: [n_rows] or NULL).
  // Every row is attempted: a row that fails gets token = -1 and the others are still sampled;
  // the status then names the lowest failing row.
  [[nodiscard]] ts_status sample(const ts_sampler_row* rows, int32_t n_rows, int32_t vocab,
                                 ts_sampler_result* results, const ts_row_scan* scans = nullptr,
                                 const ts_row_groups* groups = nullptr) noexcept;

 private:
  // First failure (lowest row) seen by one worker, and how many rows failed there.
  struct WorkerFailures {
    int64_t first_row = -1;
    RowError first;
    int64_t count = 0;
  };

  // What the host found of each row: scans or groups (or neither), [n_rows].
  struct Hints {
    const ts_row_scan* scans = nullptr;
    const ts_row_groups* groups = nullptr;
    [[nodiscard]] RowHints of(int64_t row) const;
  };

  // Runs sample_row for every row; failures are recorded in failures_.
  void sample_on_host_threads(const ts_sampler_row* rows, const Hints& hints, int32_t n_rows,
                              int32_t vocab, ts_sampler_result* results);
  // One row on a host thread: sample_row, its exceptions turned into the row's failure.
  void sample_one_on_host_thread(const ts_sampler_row& r, const RowHints& hints, int64_t row,
                                 int32_t vocab, ts_sampler_result& result,
                                 const PreparedRow& prepared);
  void sample_on_own_pool(const ts_sampler_row* rows, const Hints& hints, int32_t n_rows,
                          int32_t vocab, ts_sampler_result* results);

  const ts_host_api* host_;
  bool host_threads_;  // option threads = 0
  DrawMethod draw_;
  sdk::Logger logger_;
  std::mutex call_mutex_;
  RowPool pool_;
  std::vector<RowWorkspace> workspaces_;  // [pool_.workers()]
  std::vector<WorkerFailures> failures_;  // [pool_.workers()]; [0] on host threads
  std::mutex failures_mutex_;             // host threads record into failures_[0]
};

}  // namespace tessera::sampler
