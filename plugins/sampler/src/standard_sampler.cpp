#include "standard_sampler.hpp"

#include <algorithm>
#include <exception>
#include <string>

namespace tessera::sampler {

StandardSampler::StandardSampler(const ts_host_api* host, const SamplerOptions& options)
    : host_(host),
      host_threads_(options.threads == 0),
      draw_(options.draw),
      logger_(host, kPluginName),
      pool_(std::max(1, options.threads)),
      workspaces_(static_cast<size_t>(std::max(1, options.threads))),
      failures_(static_cast<size_t>(std::max(1, options.threads))) {
  logger_.log(TS_LOG_DEBUG,
              host_threads_ ? std::string("sampler ready, on the host's compute threads")
                            : "sampler ready, " + std::to_string(options.threads) + " thread(s)");
}

namespace {

// Rows per parallel_for item when there are at least kMinRowsForItems (sample_on_host_threads):
// a thread's first row in an item is cold (nothing asked for ahead), so items are long; 64 rows
// still spread over 4 threads. On the 2-vCPU Xeon VM, 64-row sampling in the engine: 68.8 us a
// step with items of 4 rows, 66.2 with 16, 65.0 with 32 (4 interleaved runs each).
constexpr int64_t kRowsPerItem = 16;
constexpr int64_t kMinRowsForItems = 32;

// Keeps the lowest failing row's error and counts the failures.
template <class Failures>
void record_failure(Failures& f, int64_t row, RowError&& error) {
  ++f.count;
  if (f.first_row < 0 || row < f.first_row) {
    f.first_row = row;
    f.first = std::move(error);
  }
}

}  // namespace

RowHints StandardSampler::Hints::of(int64_t row) const {
  if (groups != nullptr) {
    return {&groups[row].scan, groups[row].group_max};
  }
  return {scans != nullptr ? &scans[row] : nullptr, nullptr};
}

void StandardSampler::sample_on_own_pool(const ts_sampler_row* rows, const Hints& hints,
                                         int32_t n_rows, int32_t vocab,
                                         ts_sampler_result* results) {
  pool_.run(n_rows, [&](int64_t row, int worker) {
    RowError error =
        sample_row(rows[row], hints.of(row), vocab, draw_, results[row], workspaces_[worker]);
    if (error.failed()) {
      record_failure(failures_[worker], row, std::move(error));
    }
  });
}

void StandardSampler::sample_on_host_threads(const ts_sampler_row* rows, const Hints& hints,
                                             int32_t n_rows, int32_t vocab,
                                             ts_sampler_result* results) {
  // Many rows go out 16 at a time, so a thread knows its next rows: it asks for the first
  // lines of the row after next (prefetch_row_start) and builds the next row's envelope
  // (prepare_row) before it draws this row's proposals, whose logits were asked for when
  // this row's envelope was built.
  const int64_t per_item = n_rows >= kMinRowsForItems ? kRowsPerItem : 1;
  sdk::parallel_for(host_, (n_rows + per_item - 1) / per_item, [&](int64_t item) {
    thread_local PreparedRow prepared[2];  // rows of even and odd index
    const int64_t begin = item * per_item;
    const int64_t end = std::min<int64_t>(n_rows, begin + per_item);
    if (begin + 1 < end) {
      prefetch_row_start(rows[begin + 1], hints.of(begin + 1), vocab, draw_);
    }
    prepare_row(rows[begin], hints.of(begin), vocab, draw_, prepared[begin % 2]);
    for (int64_t row = begin; row < end; ++row) {
      if (row + 2 < end) {
        prefetch_row_start(rows[row + 2], hints.of(row + 2), vocab, draw_);
      }
      if (row + 1 < end) {
        prepare_row(rows[row + 1], hints.of(row + 1), vocab, draw_, prepared[(row + 1) % 2]);
      }
      sample_one_on_host_thread(rows[row], hints.of(row), row, vocab, results[row],
                                prepared[row % 2]);
    }
  });
}

void StandardSampler::sample_one_on_host_thread(const ts_sampler_row& r, const RowHints& hints,
                                                int64_t row, int32_t vocab,
                                                ts_sampler_result& result,
                                                const PreparedRow& prepared) {
  thread_local RowWorkspace workspace;  // each host thread keeps its own scratch
  RowError error;
  try {
    error = sample_row(r, hints, vocab, draw_, result, workspace, &prepared);
  } catch (const std::exception& e) {  // bad_alloc growing the scratch: this row fails
    result.token = -1;
    error = RowError{TS_ERR_INTERNAL, std::string("sampling failed: ") + e.what()};
  } catch (...) {  // nothing may escape into the host's threads
    result.token = -1;
    error = RowError{TS_ERR_INTERNAL, "sampling failed: unknown exception"};
  }
  if (!error.failed()) {
    return;
  }
  const std::lock_guard lock(failures_mutex_);
  record_failure(failures_[0], row, std::move(error));
}

ts_status StandardSampler::sample(const ts_sampler_row* rows, int32_t n_rows, int32_t vocab,
                                  ts_sampler_result* results, const ts_row_scan* scans,
                                  const ts_row_groups* groups) noexcept {
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
    const Hints hints{scans, groups};
    if (host_threads_) {
      sample_on_host_threads(rows, hints, n_rows, vocab, results);
    } else {
      sample_on_own_pool(rows, hints, n_rows, vocab, results);
    }

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
