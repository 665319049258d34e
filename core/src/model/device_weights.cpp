#include "model/device_weights.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>

#include "model/checkpoint_check.hpp"
#include "model/dsv4_tensor_names.hpp"
#include "model/dsv4_weight_plan.hpp"
#include "util/check.hpp"
#include "weights/checkpoint.hpp"
#include "weights/load_progress.hpp"

namespace tessera::dsv4 {
namespace {

// The stored bytes of `t` copied into new memory of `device`; the copy has read them when it
// returns (device.hpp), so the mmap'd pages may be dropped at once.
device::DeviceBuffer place(device::Device& device, const device::Stream& stream,
                           std::span<const std::byte> bytes) {
  device::DeviceBuffer b = device.allocate(bytes.size());
  device.copy(b.data(), bytes.data(), bytes.size(), device::CopyKind::kHostToDevice, stream);
  return b;
}

// Weight rows or columns one scale entry covers along `axis` (1: no scale).
int64_t scale_block(const StoredTensor& w, const StoredTensor* scale, SplitAxis axis) {
  if (scale == nullptr) {
    return 1;
  }
  if (w.dtype == weights::DType::F8_E4M3) {
    return 128;  // 128 x 128 blocks
  }
  if (axis == SplitAxis::kRows) {
    return 1;  // FP4: one scale row per weight row
  }
  return w.dtype == weights::DType::I8 ? 16 : 32;  // 32 values: 16 packed bytes
}

}  // namespace

DeviceModelWeights upload_model_weights(device::Device& device, const device::Stream& stream,
                                        const std::filesystem::path& model_dir,
                                        const ModelConfig& config, RankShare share,
                                        uint64_t reserve_bytes) {
  const auto start = std::chrono::steady_clock::now();
  const weights::Checkpoint ckpt = weights::Checkpoint::open(model_dir);
  const std::map<std::string, StoredTensor> catalog = build_tensor_catalog(ckpt);
  ModelWeights shapes;  // only shaped by the plan: the specs point into it, nothing is loaded
  const std::vector<TensorSpec> specs = plan_model_tensors(config, shapes);
  const CheckedCheckpoint checked = check_checkpoint(catalog, specs, model_dir);

  const ExpertRange experts = local_experts(share, config.n_routed_experts);
  // Under expert parallelism the routed experts of other ranks are not read at all.
  auto placed_here = [&](const LoadJob& job) {
    const int64_t e = routed_expert_of(job.spec->name);
    return e < 0 || experts.holds(e);
  };
  uint64_t stored_bytes = 0, share_bytes = 0;
  for (const LoadJob& job : checked.jobs) {
    stored_bytes += job_bytes(job);
    if (!placed_here(job)) {
      continue;
    }
    const bool split =
        job.decode != Decode::Table && split_axis(job.spec->name, share) != SplitAxis::kWhole;
    share_bytes += split ? job_bytes(job) / static_cast<uint64_t>(share.ranks) : job_bytes(job);
  }
  const uint64_t free = device.free_bytes();
  constexpr double kGiB = 1u << 30;
  TS_CHECK(share_bytes + reserve_bytes <= free,
           "{}: {} needs {:.2f} GiB of weights{} + {:.2f} GiB of kv pool ([kv_cache] memory_gib), "
           "{:.2f} GiB in all; {} has {:.2f} GiB free",
           model_dir.string(),
           share.ranks > 1 ? fmt::format("rank {} of {}", share.rank, share.ranks)
                           : std::string("the model"),
           static_cast<double>(share_bytes) / kGiB,
           share.ranks > 1
               ? fmt::format(" (its share of {:.2f} GiB)", static_cast<double>(stored_bytes) / kGiB)
               : std::string(),
           static_cast<double>(reserve_bytes) / kGiB,
           static_cast<double>(share_bytes + reserve_bytes) / kGiB, device.describe(),
           static_cast<double>(free) / kGiB);
  weights::LoadProgress progress("placing weights on " + device.describe(), stored_bytes);
  DeviceModelWeights out;
  uint64_t done = 0;
  try {
    for (const LoadJob& job : checked.jobs) {
      const StoredTensor& w = *job.weight;
      done += job_bytes(job);
      if (!placed_here(job)) {
        progress.update(done);
        continue;
      }
      DeviceTensor t;
      if (job.decode == Decode::Table) {
        const std::vector<int32_t> table = decode_token_table(*job.spec, w);
        t.dtype = weights::DType::I32;
        t.shape = job.spec->shape;
        t.data = place(device, stream,
                       std::as_bytes(std::span<const int32_t>(table.data(), table.size())));
        device.synchronize(stream);  // `table` dies here
      } else {
        const SplitAxis axis = split_axis(job.spec->name, share);
        const TensorShare part =
            share_of(w, job.spec->name, axis, share, scale_block(w, job.scale, axis));
        t.dtype = w.dtype;
        t.shape = part.shape;
        t.data = place(device, stream, part.bytes);  // read when it returns: `part` may go
        if (job.scale != nullptr) {
          const TensorShare scale = share_of(*job.scale, job.spec->name + " (scale)", axis, share);
          t.scale_dtype = job.scale->dtype;
          t.scale_shape = scale.shape;
          t.scale = place(device, stream, scale.bytes);
        }
      }
      out.bytes += t.data.bytes() + t.scale.bytes();
      out.tensors.emplace(job.spec->name, std::move(t));
      progress.update(done);
    }
    device.synchronize(stream);
  } catch (...) {
    progress.abandon();
    throw;
  }
  progress.finish();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  spdlog::info(
      "placed {} tensors from {} on {}{}: {:.1f} MiB of device memory [{}] in {:.2f} s "
      "({:.2f} GiB/s)",
      out.tensors.size(), model_dir.string(), device.describe(),
      share.ranks > 1 ? fmt::format(" (rank {} of {}{})", share.rank, share.ranks,
                                    share.expert_parallel
                                        ? fmt::format(", routed experts [{}, {})", experts.first,
                                                      experts.first + experts.count)
                                        : std::string())
                      : "",
      static_cast<double>(out.bytes) / (1 << 20), dtype_summary(checked.jobs), seconds,
      seconds > 0 ? static_cast<double>(stored_bytes) / (1 << 30) / seconds : 0.0);
  return out;
}

}  // namespace tessera::dsv4
