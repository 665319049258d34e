// The device forward's last part (model/device_model.hpp): the vocabulary head over the rows that
// get logits, and the step's one copy back to the host. What comes back, in one block of the
// model's page-locked host memory: the routing and kv-store failures; on the rank that samples,
// every row's scan and group maxima, and the values of the rows that want them (a scan-only
// chunk's row stays on the device: its scan answers a greedy sampler). Under tensor parallelism
// a step whose rows all want scans only gathers the vocabulary shards' scans, [ranks, rows], and
// merges them on the host, instead of gathering the shards' values.
#include <algorithm>
#include <memory>
#include <span>

#include "model/device_forward_context.hpp"
#include "model/device_model.hpp"
#include "tessera/plugin_abi.h"

namespace tessera::dsv4 {
namespace {

// Offsets into a host block: every part starts on a 256-byte boundary.
size_t align_up(size_t bytes) { return (bytes + 255) / 256 * 256; }

// A row scan crosses the collectives as fp32 words (an all-gather copies them unchanged).
static_assert(sizeof(ops::RowScan) % sizeof(float) == 0);
constexpr size_t kScanWords = sizeof(ops::RowScan) / sizeof(float);

// For each logits row, where its values go among those copied back (or -1: scan only); the head
// rows whose values are copied are appended to `with_values`.
std::vector<int64_t> value_places(const ForwardBatch& batch, std::vector<int64_t>& with_values) {
  std::vector<int64_t> place;
  for (const SequenceChunk& c : batch.chunks) {
    const auto n = c.all_logits ? static_cast<int64_t>(c.tokens.size()) : 1;
    for (int64_t i = 0; i < n; ++i) {
      if (c.all_logits || !c.scan_only) {
        place.push_back(static_cast<int64_t>(with_values.size()));
        with_values.push_back(static_cast<int64_t>(place.size()) - 1);
      } else {
        place.push_back(-1);
      }
    }
  }
  return place;
}

}  // namespace

DeviceModel::StepReturn DeviceModel::vocabulary_head(const ForwardBatch& batch,
                                                     const float* streams,
                                                     const int64_t* failures_dev, Logits& logits) {
  const int64_t D = config_.hidden_size, n = config_.hc_mult, V = config_.vocab_size;
  const auto eps = static_cast<float>(config_.rms_norm_eps);
  const device::DeviceOps& ops = device_.ops();
  const auto L = static_cast<size_t>(config_.num_layers);
  logits.vocab = V;
  const std::vector<int64_t> rows = logit_rows(batch, logits.chunk_rows);
  const auto R = static_cast<int64_t>(rows.size());
  std::vector<int64_t> with_values;
  logits.value_row = value_places(batch, with_values);
  const auto Rv = static_cast<int64_t>(with_values.size());
  if (Rv == R) {
    logits.value_row.clear();  // every row's values, in order
  }

  // Only the rows that get logits go through hc_head, the norm and the vocabulary head.
  auto* rows_dev = context_scratch_.get<int64_t>("head.rows", R);
  staging_.upload(rows_dev, std::span<const int64_t>(rows), stream_);
  float* picked = context_scratch_.get<float>("head.streams", R * n * D);
  float* mix = context_scratch_.get<float>("head.mix", R * n);
  float* y = context_scratch_.get<float>("head.y", R * D);
  ops.gather_rows(stream_, streams, rows_dev, R, n * D, picked);
  ops.hc_mix_logits(stream_, picked, R, n * D, weights_.hc_head.fn, n, eps, mix);
  ops.hc_head_mix(stream_, mix, weights_.hc_head.scale, weights_.hc_head.base,
                  static_cast<float>(config_.hc_eps), picked, R, n, D, y);
  rms_norm(ops, stream_, y, R, D, weights_.norm, eps);

  const bool sampled_here = comm_ == nullptr || comm_->rank() == 0;
  const bool shard_scans = comm_ != nullptr && Rv == 0;
  const int64_t groups = TS_LOGIT_GROUP_COUNT(V);
  const int64_t Vr = weights_.head.out;  // this rank's vocabulary rows (V without TP)
  float* values = nullptr;               // [R, V] on the sampling rank
  ops::RowScan* gathered_scans = nullptr;
  if (comm_ == nullptr) {
    values = context_scratch_.get<float>("head.logits", R * V);
    linear(ops, stream_, y, R, weights_.head, values);
  } else if (!shard_scans) {  // each rank's rows of the vocabulary, [N, R, Vr] put in order [R, V]
    values = context_scratch_.get<float>("head.logits", R * V);
    float* part = context_scratch_.get<float>("head.part", R * Vr);
    float* gathered = context_scratch_.get<float>("head.gathered", R * V);
    linear(ops, stream_, y, R, weights_.head, part);
    comm_->all_gather(part, static_cast<size_t>(R * Vr), gathered, stream_);
    if (sampled_here) {
      ops.swap_outer_axes(stream_, gathered, comm_->size(), R, Vr, values);
    }
  } else {  // each rank scans its part; the scans [N, R] gathered
    float* part = context_scratch_.get<float>("head.part", R * Vr);
    auto* own = context_scratch_.get<ops::RowScan>("head.shard_scan", R);
    float* own_groups =
        context_scratch_.get<float>("head.shard_groups", R * TS_LOGIT_GROUP_COUNT(Vr));
    gathered_scans = context_scratch_.get<ops::RowScan>("head.shard_scans", comm_->size() * R);
    linear(ops, stream_, y, R, weights_.head, part);
    ops.scan_rows(stream_, part, R, Vr, own, own_groups);
    comm_->all_gather(reinterpret_cast<const float*>(own), static_cast<size_t>(R) * kScanWords,
                      reinterpret_cast<float*>(gathered_scans), stream_);
  }

  const size_t n_values = sampled_here ? static_cast<size_t>(Rv * V) : 0;
  const size_t n_groups = sampled_here && !shard_scans ? static_cast<size_t>(R * groups) : 0;
  const size_t n_scans =
      !sampled_here ? 0 : static_cast<size_t>(shard_scans ? comm_->size() * R : R);
  const size_t failure_bytes = L * (1 + kKvStores) * sizeof(int64_t);
  const size_t at_values = align_up(failure_bytes);
  const size_t at_groups = at_values + align_up(n_values * sizeof(float));
  const size_t at_scans = at_groups + align_up(n_groups * sizeof(float));
  StepReturn back;
  back.block = host_blocks_.take(at_scans + n_scans * sizeof(ops::RowScan));
  const std::shared_ptr<std::byte>& block = back.block;
  back.failures = reinterpret_cast<const int64_t*>(block.get());
  device_.copy(block.get(), failures_dev, failure_bytes, device::CopyKind::kDeviceToHost, stream_);
  if (!sampled_here) {  // the other ranks' logits are not read
    logits.value_row.clear();
    return back;
  }
  auto* scans_host = reinterpret_cast<ops::RowScan*>(block.get() + at_scans);
  if (shard_scans) {
    device_.copy(scans_host, gathered_scans, n_scans * sizeof(ops::RowScan),
                 device::CopyKind::kDeviceToHost, stream_);
    back.shard_scans = scans_host;
    back.rows = R;
    back.shard_columns = Vr;
    return back;
  }
  auto* scans = context_scratch_.get<ops::RowScan>("head.scans", R);
  auto* group_max = context_scratch_.get<float>("head.group_max", R * groups);
  ops.scan_rows(stream_, values, R, V, scans, group_max);
  logits.values =
      HostArray<float>(reinterpret_cast<float*>(block.get() + at_values), n_values, block);
  logits.group_max =
      HostArray<float>(reinterpret_cast<float*>(block.get() + at_groups), n_groups, block);
  logits.scans = HostArray<ops::RowScan>(scans_host, n_scans, block);
  const float* copied = values;
  if (Rv > 0 && Rv < R) {  // the rows with values gathered, one copy
    auto* source = context_scratch_.get<int64_t>("head.value_rows", Rv);
    staging_.upload(source, std::span<const int64_t>(with_values), stream_);
    float* compact = context_scratch_.get<float>("head.values", Rv * V);
    ops.gather_rows(stream_, values, source, Rv, V, compact);
    copied = compact;
  }
  device_.copy(logits.values.data(), copied, n_values * sizeof(float),
               device::CopyKind::kDeviceToHost, stream_);
  device_.copy(scans_host, scans, n_scans * sizeof(ops::RowScan), device::CopyKind::kDeviceToHost,
               stream_);
  device_.copy(logits.group_max.data(), group_max, n_groups * sizeof(float),
               device::CopyKind::kDeviceToHost, stream_);
  return back;
}

void DeviceModel::merge_shard_scans(const StepReturn& back, Logits& logits) const {
  if (back.shard_scans == nullptr) {
    return;
  }
  // Shard k holds columns [k * Vr, (k + 1) * Vr): the largest max wins, the lower shard on a tie
  // (the lowest column holding the max); a row is finite when every shard's part is. Row r is
  // written after every shard's entry of it was read (those of shards >= 1 lie past row R).
  ops::RowScan* s = back.shard_scans;
  const int64_t R = back.rows;
  for (int64_t r = 0; r < R; ++r) {
    ops::RowScan best = s[r];
    for (int64_t k = 1; k < comm_->size(); ++k) {
      const ops::RowScan& part = s[k * R + r];
      best.finite = best.finite && part.finite;
      if (part.max > best.max) {
        best.max = part.max;
        best.argmax = static_cast<int32_t>(k * back.shard_columns + part.argmax);
      }
    }
    if (!best.finite) {
      best.argmax = -1;
    }
    s[r] = best;
  }
  logits.scans = HostArray<ops::RowScan>(s, static_cast<size_t>(R), back.block);
}

}  // namespace tessera::dsv4
