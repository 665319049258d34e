// load_model_weights: open -> name mapping -> validate everything against the config -> decode.
// Validation finishes (and reports every problem it found) before any weight byte is decoded;
// decoding then runs over a few threads, one tensor per task, reading straight from the mmap.
#include "model/dsv4_weights.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "model/checkpoint_check.hpp"
#include "model/dsv4_tensor_names.hpp"
#include "model/dsv4_weight_plan.hpp"
#include "util/check.hpp"
#include "util/edit_distance.hpp"
#include "weights/checkpoint.hpp"
#include "weights/load_progress.hpp"
#include "weights/numeric_formats.hpp"

namespace tessera::dsv4 {
namespace {

using weights::DType;

void run_job(const LoadJob& job) {
  const TensorSpec& spec = *job.spec;
  const StoredTensor& w = *job.weight;
  if (job.decode == Decode::Table) {
    *spec.table = decode_token_table(spec, w);
    return;
  }
  Tensor& dst = *spec.dst;
  dst.shape = spec.shape;
  int64_t numel = 1;
  for (int64_t d : spec.shape) {
    numel *= d;
  }
  dst.data.resize(static_cast<std::size_t>(numel));
  if (job.decode == Decode::Convert) {
    weights::convert_to_f32(w.dtype, w.bytes, dst.data);
    return;
  }
  const StoredTensor& s = *job.scale;
  int64_t scale_numel = 1;
  for (int64_t d : s.shape) {
    scale_numel *= d;
  }
  std::vector<float> scale(static_cast<std::size_t>(scale_numel));
  weights::convert_to_f32(s.dtype, s.bytes, scale);
  if (job.decode == Decode::Fp8Blocks) {
    weights::dequantize_fp8_blocks(w.bytes, spec.shape[0], spec.shape[1], scale, kFp8Block,
                                   kFp8Block, dst.data);
  } else {
    weights::dequantize_fp4_groups(w.bytes, spec.shape[0], spec.shape[1], scale, kFp4Group,
                                   dst.data);
  }
}

// Decodes all jobs on up to 8 threads; rethrows the first failure. Progress goes to `progress`.
void run_jobs(const std::vector<LoadJob>& jobs, weights::LoadProgress& progress,
              uint64_t total_bytes) {
  constexpr uint64_t kBytesPerThread = 64ull << 20;  // small models: threads cost more than save
  const unsigned threads = static_cast<unsigned>(std::clamp<uint64_t>(
      std::min<uint64_t>(total_bytes / kBytesPerThread + 1, std::thread::hardware_concurrency()), 1,
      8));
  std::atomic<std::size_t> next{0};
  std::atomic<uint64_t> done_bytes{0};
  std::atomic<bool> failed{false};
  std::string first_error;
  std::mutex mutex;
  std::condition_variable finished_cv;
  unsigned finished = 0;

  const auto worker = [&] {
    for (std::size_t i = next++; i < jobs.size() && !failed; i = next++) {
      try {
        run_job(jobs[i]);
      } catch (const std::exception& e) {
        std::lock_guard lock(mutex);
        if (!failed.exchange(true)) {
          first_error = e.what();
        }
      }
      done_bytes += job_bytes(jobs[i]);
    }
    std::lock_guard lock(mutex);
    ++finished;
    finished_cv.notify_all();
  };
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back(worker);
  }
  {
    std::unique_lock lock(mutex);
    while (!finished_cv.wait_for(lock, std::chrono::milliseconds(100),
                                 [&] { return finished == threads; })) {
      progress.update(done_bytes);
    }
  }
  for (auto& t : pool) {
    t.join();
  }
  if (failed) {
    progress.abandon();
    throw Error(first_error);
  }
  progress.finish();
}

}  // namespace

ModelWeights load_model_weights(const std::filesystem::path& model_dir, const ModelConfig& config) {
  const auto start = std::chrono::steady_clock::now();
  const weights::Checkpoint ckpt = weights::Checkpoint::open(model_dir);
  const std::map<std::string, StoredTensor> catalog = build_tensor_catalog(ckpt);

  ModelWeights model;
  const std::vector<TensorSpec> specs = plan_model_tensors(config, model);
  const CheckedCheckpoint checked = check_checkpoint(catalog, specs, model_dir);
  if (checked.ignored > 0) {
    spdlog::info("{}: ignoring {} MTP tensors (mtp.*): multi-token prediction is not used",
                 model_dir.string(), checked.ignored);
  }

  const auto& jobs = checked.jobs;
  uint64_t stored_bytes = 0, fp32_bytes = 0;
  for (const auto& job : jobs) {
    stored_bytes += job_bytes(job);
    int64_t numel = 1;
    for (int64_t d : job.spec->shape) {
      numel *= d;
    }
    fp32_bytes += static_cast<uint64_t>(numel) * 4;  // fp32 or int32
  }
  weights::LoadProgress progress("loading weights", stored_bytes);
  run_jobs(jobs, progress, stored_bytes);

  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  spdlog::info(
      "loaded {} tensors from {} ({} file{}): {:.1f} MiB read [{}] -> {:.1f} MiB fp32 in "
      "{:.2f} s ({:.2f} GiB/s)",
      jobs.size(), model_dir.string(), ckpt.num_files(), ckpt.num_files() == 1 ? "" : "s",
      static_cast<double>(stored_bytes) / (1 << 20), dtype_summary(jobs),
      static_cast<double>(fp32_bytes) / (1 << 20), seconds,
      seconds > 0 ? static_cast<double>(stored_bytes) / (1 << 30) / seconds : 0.0);
  return model;
}

}  // namespace tessera::dsv4
