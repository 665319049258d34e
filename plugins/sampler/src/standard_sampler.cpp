#include "standard_sampler.hpp"

#include <string>

namespace tessera::sampler {

StandardSampler::StandardSampler(const ts_host_api* host, const SamplerOptions& options)
    : logger_(host, kPluginName),
      pool_(options.threads),
      workspaces_(options.threads),
      failures_(options.threads) {
  logger_.log(TS_LOG_DEBUG, "sampler ready, " + std::to_string(options.threads) + " thread(s)");
}

ts_status StandardSampler::sample(const ts_sampler_row* rows, int32_t n_rows, int32_t vocab,
                                  ts_sampler_result* results) noexcept {
  return sdk::guarded([&]() -> ts_status {
    if (n_rows < 0) {
      return sdk::fail(TS_ERR_INVALID_ARGUMENT,
                       "sample: n_rows = " + std::to_string(n_rows) + " (must be >= 0)");
    }
    if (n_rows == 0) {
      return sdk::ok();
    }
    if (rows == nullptr || results == nullptr) {
      return sdk::fail(TS_ERR_INVALID_ARGUMENT, "sample: rows or results is NULL");
    }
    if (vocab <= 0) {
      return sdk::fail(TS_ERR_INVALID_ARGUMENT,
                       "sample: vocab = " + std::to_string(vocab) + " (must be > 0)");
    }

    std::lock_guard lock(call_mutex_);
    for (auto& f : failures_) {
      f = WorkerFailures{};
    }
    pool_.run(n_rows, [&](int64_t row, int worker) {
      RowError error = sample_row(rows[row], vocab, results[row], workspaces_[worker]);
      if (!error.failed()) {
        return;
      }
      WorkerFailures& f = failures_[worker];
      ++f.count;
      if (f.first_row < 0 || row < f.first_row) {
        f.first_row = row;
        f.first = std::move(error);
      }
    });

    const WorkerFailures* first = nullptr;
    int64_t failed_rows = 0;
    for (const auto& f : failures_) {
      failed_rows += f.count;
      if (f.count > 0 && (first == nullptr || f.first_row < first->first_row)) {
        first = &f;
      }
    }
    if (first == nullptr) {
      return sdk::ok();
    }
    std::string message = "row " + std::to_string(first->first_row) + ": " + first->first.message;
    if (failed_rows > 1) {
      message += " (" + std::to_string(failed_rows - 1) + " more of " + std::to_string(n_rows) +
                 " rows failed too)";
    }
    message += "; failed rows have token -1, the other rows were sampled";
    return sdk::fail(first->first.code, std::move(message));
  });
}

}  // namespace tessera::sampler
