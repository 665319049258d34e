#include "model/device_compressors.hpp"

#include <algorithm>
#include <span>
#include <string>

#include "device/plugin_device.hpp"
#include "model/device_forward_context.hpp"
#include "util/check.hpp"

namespace tessera::dsv4 {
namespace {

// Where snapshot i's state of layer's main (indexer false) or indexer compressor is staged.
size_t snapshot_index(size_t i, int64_t layer, bool indexer, int64_t layers) {
  return (i * static_cast<size_t>(layers) + static_cast<size_t>(layer)) * 2 + (indexer ? 1 : 0);
}

template <class T>
void upload(const DeviceForwardContext& ctx, T* dst, const std::vector<T>& src) {
  ctx.staging.upload(dst, std::span<const T>(src), ctx.stream);
}

// Whether the chunk resumes a sequence whose rings do not hold its last windows (a prefix hit:
// the state comes from the snapshot, on the host).
bool resumes_unprimed(const SequenceChunk& c) { return c.kv->length() > 0 && !c.kv->ring_primed(); }

// The first snapshot length the chunk's tokens reach (in (p0, p0 + n]) after `after`, or 0.
int64_t snapshot_in_chunk(const SequenceChunk& c, int64_t after) {
  const int64_t next = c.kv->next_pending_snapshot(after);
  return next <= c.kv->length() + static_cast<int64_t>(c.tokens.size()) ? next : 0;
}

}  // namespace

bool DeviceCompressors::steady(const ForwardBatch& batch) {
  return std::none_of(batch.chunks.begin(), batch.chunks.end(), [](const SequenceChunk& c) {
    return resumes_unprimed(c) || snapshot_in_chunk(c, c.kv->length()) > 0;
  });
}

void DeviceCompressors::plan(const DeviceForwardContext& ctx) {
  const ModelConfig& cfg = ctx.config;
  fixed_ = ctx.graphed;
  slots_dev_ = nullptr;
  chunks_.clear();
  snapshots_.clear();
  restores_.clear();
  plans_.clear();
  for (int64_t row = 0; const SequenceChunk& c : ctx.batch.chunks) {
    const auto n = static_cast<int64_t>(c.tokens.size());
    const int64_t p0 = c.kv->length();
    chunks_.push_back({c.kv, p0, row, n, c.kv->ring_slot()});
    row += n;
    for (int64_t length = snapshot_in_chunk(c, p0); length > 0;
         length = snapshot_in_chunk(c, length)) {
      snapshots_.push_back({chunks_.size() - 1, length});
    }
    if (!resumes_unprimed(c)) {
      continue;
    }
    Restore& r = restores_.emplace_back();
    r.chunk = chunks_.size() - 1;
    r.main.resize(static_cast<size_t>(cfg.num_layers));
    r.indexer.resize(static_cast<size_t>(cfg.num_layers));
    for (int64_t l = 0; l < cfg.num_layers; ++l) {
      const int64_t m = cfg.compress_ratio(l);
      TS_CHECK(m == 0 || p0 % m == 0,
               "a sequence resumed at {} tokens, inside a compressor window of layer {} ({})", p0,
               l, m);
      if (m == 4) {  // the snapshot holds the previous window (nothing for m = 128)
        r.main[static_cast<size_t>(l)] = c.kv->compressor(l).snapshot();
        r.indexer[static_cast<size_t>(l)] = c.kv->index_compressor(l).snapshot();
      }
    }
  }
  const int64_t R = ctx.rows;  // the projections' rows (a graph bucket's padding included)
  if (static_cast<size_t>(R) > ones_.size()) {  // the buffer grows (and is refilled) only here
    ones_.assign(static_cast<size_t>(R), 1.0F);
    float* ones = ctx.scratch.get<float>("compressor.ones", R);
    upload(ctx, ones, ones_);
    ones_dev_ = ones;
  }
  plan_snapshots(ctx);
  for (int64_t l = 0; l < cfg.num_layers; ++l) {
    const int64_t m = cfg.compress_ratio(l);
    const bool planned =
        std::any_of(plans_.begin(), plans_.end(), [m](const RatioPlan& p) { return p.m == m; });
    if (m > 0 && !planned) {
      plans_.push_back(plan_ratio(ctx, m));
    }
  }
  if (fixed_) {
    TS_CHECK(snapshots_.empty() && restores_.empty(),
             "device compressors: a step with a snapshot or a restore cannot run from graphs");
    plan_slots(ctx);
  }
}

void DeviceCompressors::plan_slots(const DeviceForwardContext& ctx) {
  const ModelConfig& cfg = ctx.config;
  const int64_t R = ctx.rows, L = cfg.num_layers;
  std::vector<int64_t> slots(static_cast<size_t>(L * 2 * R), -1);
  for (int64_t l = 0; l < L; ++l) {
    const int64_t m = cfg.compress_ratio(l);
    if (m == 0) {
      continue;
    }
    const RatioPlan& p = plan_of(m);
    for (size_t i = 0; i < p.owner.size(); ++i) {  // the main entry first: the indexer's follows it
      SequenceKv& owner = *chunks_[p.owner[i]].kv;
      slots[static_cast<size_t>(l * 2 * R) + i] = owner.append_compressed(l);
      if (m == 4) {
        slots[static_cast<size_t>((l * 2 + 1) * R) + i] = owner.indexer_slot(l, p.rope_host[i] / m);
      }
    }
  }
  auto* on_device = ctx.scratch.get<int64_t>("compressor.slots", L * 2 * R);
  upload(ctx, on_device, slots);
  slots_dev_ = on_device;
}

DeviceCompressors::RatioPlan DeviceCompressors::plan_ratio(const DeviceForwardContext& ctx,
                                                           int64_t m) const {
  RatioPlan p;
  p.m = m;
  std::vector<int64_t> window, first_position, first_row, slot_row, ape_rows, src, dst;
  for (size_t c = 0; c < chunks_.size(); ++c) {
    const Chunk& ch = chunks_[c];
    const int64_t end = ch.first_position + ch.tokens;
    for (int64_t q = ch.first_position; q < end; ++q) {
      ape_rows.push_back(q % m);
      if (q % m == m - 1) {  // closes window q / m
        window.push_back(q / m);
        first_position.push_back(ch.first_position);
        first_row.push_back(ch.first_row);
        slot_row.push_back(ch.slot * CompressorRings::windows(m) * m);
        p.rope_host.push_back(static_cast<int32_t>(q / m * m));
        p.owner.push_back(c);
      }
    }
    // The rows a later step may read: the open window's, and the one before it when overlapping.
    const int64_t keep_from =
        std::max(ch.first_position, (end / m - (CompressorRings::windows(m) - 1)) * m);
    for (int64_t q = keep_from; q < end; ++q) {
      src.push_back(ch.first_row + q - ch.first_position);
      dst.push_back(CompressorRings::row(ch.slot, q, m));
    }
  }
  auto count = static_cast<int64_t>(window.size());
  if (fixed_) {  // the graphs' fixed size: ctx.rows windows and kept rows, padding marked -1
    const auto R = static_cast<size_t>(ctx.rows);
    TS_CHECK(window.size() <= R && src.size() <= R,
             "device compressors: {} windows and {} kept rows in a step of {} rows", window.size(),
             src.size(), R);
    window.resize(R, -1);
    first_position.resize(R, 0);
    first_row.resize(R, 0);
    slot_row.resize(R, 0);
    p.rope_host.resize(R, 0);
    src.resize(R, 0);
    dst.resize(R, -1);
    count = ctx.rows;
  }
  p.keep = static_cast<int64_t>(src.size());
  for (const auto* part : {&window, &first_position, &first_row, &slot_row, &src, &dst}) {
    p.host.insert(p.host.end(), part->begin(), part->end());
  }
  const std::string tag = "compressor.plan." + std::to_string(m);
  // Read inside the graphs when fixed_ (the step's scratch keeps their addresses).
  device::Scratch& where = fixed_ ? ctx.scratch : ctx.context_scratch;
  auto* packed = where.get<int64_t>(tag, static_cast<int64_t>(p.host.size()));
  auto* rope = where.get<int32_t>(tag + ".rope", count);
  upload(ctx, packed, p.host);
  upload(ctx, rope, p.rope_host);
  // The ape rows are read by the projections, inside the graphs: in the step's scratch (fixed
  // addresses), a padding row taking row 0.
  ape_rows.resize(static_cast<size_t>(ctx.rows), 0);
  auto* ape = ctx.scratch.get<int64_t>(tag + ".ape_rows", ctx.rows);
  upload(ctx, ape, ape_rows);
  p.windows = {count, m, 0, packed, packed + count, packed + 2 * count, packed + 3 * count};
  p.ape_rows = ape;
  p.keep_src = packed + 4 * count;
  p.keep_dst = p.keep_src + p.keep;
  p.rope_positions = rope;
  return p;
}

const DeviceCompressors::RatioPlan& DeviceCompressors::plan_of(int64_t m) const {
  const auto it =
      std::find_if(plans_.begin(), plans_.end(), [m](const RatioPlan& p) { return p.m == m; });
  TS_CHECK(it != plans_.end(), "device compressors: no plan for ratio {} this step", m);
  return *it;
}

void DeviceCompressors::project(const DeviceForwardContext& ctx, int64_t layer,
                                const DeviceCompressor& w, bool indexer, const float* x) const {
  const device::DeviceOps& ops = ctx.ops;
  const device::Stream& s = ctx.stream;
  const RatioPlan& p = plan_of(ctx.config.compress_ratio(layer));
  const int64_t R = ctx.rows, width = w.wkv.out;
  const std::string tag = indexer ? "compressor.index." : "compressor.main.";
  float* kv = ctx.scratch.get<float>(tag + "kv", R * width);      // [R, width]
  float* gate = ctx.scratch.get<float>(tag + "gate", R * width);  // [R, width]
  linear(ops, s, x, R, w.wkv, kv);
  linear(ops, s, x, R, w.wgate, gate);
  // gate[t] += ape[p_t % m]: the combine with one "expert" of weight 1 per row.
  ops.moe_combine(s, w.ape, p.ape_rows, ones_dev_, R, 1, width, gate);
}

void DeviceCompressors::run(const DeviceForwardContext& ctx, int64_t layer,
                            const DeviceCompressor& w, bool indexer, const float* inv_freq) const {
  const ModelConfig& cfg = ctx.config;
  const device::DeviceOps& ops = ctx.ops;
  const device::Stream& s = ctx.stream;
  const int64_t m = cfg.compress_ratio(layer);
  const RatioPlan& p = plan_of(m);
  const int64_t width = w.wkv.out, d = indexer ? cfg.index_head_dim : cfg.head_dim;
  const CompressorRings::Ring& ring = ctx.pools.rings.ring(layer, indexer);
  TS_CHECK(ring.width == width, "layer {}: compressor ring rows of {} values, projections of {}",
           layer, ring.width, width);

  // The step's projections (project(), in the layer's graph piece): [rows, width].
  const std::string tag = indexer ? "compressor.index." : "compressor.main.";
  const float* kv = ctx.scratch.get<float>(tag + "kv", ctx.rows * width);
  const float* gate = ctx.scratch.get<float>(tag + "gate", ctx.rows * width);
  load_restored(ctx, layer, indexer, ring);

  const int64_t count = p.windows.count;
  const ts_kv_layout& layout =
      indexer ? ctx.kv_format.indexer_layout() : ctx.kv_format.main_layout();
  uint8_t* pool = indexer ? ctx.pools.indexer.data() : ctx.pools.main.data();
  int64_t* first_bad =
      ctx.kv_failures + layer * kKvStores + (indexer ? kIndexerKeys : kCompressedKv);
  // [count, d]; of a fixed size in the step's scratch when the step runs from graphs.
  float* entries = count == 0 ? nullptr
                   : fixed_   ? ctx.scratch.get<float>(tag + "entries", count * d)
                              : ctx.context_scratch.get<float>(tag + "entries", count * d);
  if (count > 0) {
    device::CompressorWindows windows = p.windows;
    windows.dim = d;
    ops.compress_windows(s, windows, kv, gate, ring.kv, ring.gate, entries);
    rms_norm(ops, s, entries, count, d, w.norm, static_cast<float>(cfg.rms_norm_eps));
    ops.rope(s, entries, count, 1, d, cfg.rope_dim, p.rope_positions, inv_freq, false);
  }
  if (fixed_) {  // the slots taken in plan(), padding -1; the rings: padding rows skipped
    ctx.kv_format.store_device_slots(layout, entries, count,
                                     slots_dev_ + (layer * 2 + (indexer ? 1 : 0)) * ctx.rows, pool,
                                     device::plugin_device(ctx.device, s), first_bad);
    ops.copy_rows(s, kv, p.keep_src, p.keep, width, ring.kv, p.keep_dst);
    ops.copy_rows(s, gate, p.keep_src, p.keep, width, ring.gate, p.keep_dst);
    return;
  }
  if (count > 0) {
    std::vector<int64_t> slots(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
      SequenceKv& owner = *chunks_[p.owner[static_cast<size_t>(i)]].kv;
      const int64_t k = p.rope_host[static_cast<size_t>(i)] / m;
      slots[static_cast<size_t>(i)] =
          indexer ? owner.indexer_slot(layer, k) : owner.append_compressed(layer);
    }
    ctx.kv_format.store(layout, entries, slots, pool, device::plugin_device(ctx.device, s),
                        first_bad);
  }
  record_snapshots(ctx, layer, indexer, ring, kv, gate);
  if (p.keep > 0) {  // after every read of the rings this step
    ops.copy_rows(s, kv, p.keep_src, p.keep, width, ring.kv, p.keep_dst);
    ops.copy_rows(s, gate, p.keep_src, p.keep, width, ring.gate, p.keep_dst);
  }
}

void DeviceCompressors::load_restored(const DeviceForwardContext& ctx, int64_t layer, bool indexer,
                                      const CompressorRings::Ring& ring) const {
  for (const Restore& r : restores_) {
    const CompressorSnapshot& snap = (indexer ? r.indexer : r.main)[static_cast<size_t>(layer)];
    if (!snap.has_previous) {
      continue;
    }
    const Chunk& ch = chunks_[r.chunk];
    const int64_t m = ctx.config.compress_ratio(layer);
    const int64_t row =
        CompressorRings::row(ch.slot, ch.first_position - m, m);  // the previous window
    const size_t bytes = snap.prev_kv.size() * sizeof(float);
    ctx.staging.upload_bytes(ring.kv + row * ring.width, snap.prev_kv.data(), bytes, ctx.stream);
    ctx.staging.upload_bytes(ring.gate + row * ring.width, snap.prev_gate.data(), bytes,
                             ctx.stream);
  }
}

void DeviceCompressors::plan_snapshots(const DeviceForwardContext& ctx) {
  const ModelConfig& cfg = ctx.config;
  snapshot_offsets_.assign(snapshots_.size() * static_cast<size_t>(cfg.num_layers) * 2, -1);
  int64_t floats = 0;
  for (size_t i = 0; i < snapshots_.size(); ++i) {
    for (int64_t l = 0; l < cfg.num_layers; ++l) {
      if (cfg.compress_ratio(l) != 4) {
        continue;  // at a window boundary, m = 128 resumes from nothing
      }
      for (const bool indexer : {false, true}) {
        snapshot_offsets_[snapshot_index(i, l, indexer, cfg.num_layers)] = floats;
        floats += int64_t{2} * 4 * ctx.pools.rings.ring(l, indexer).width;  // kv, gate [m, width]
      }
    }
  }
  snapshot_floats_ = static_cast<size_t>(floats);
  if (snapshot_floats_ > snapshot_capacity_) {  // page-locked: the copy back needs no staging
    snapshot_host_ = ctx.device.allocate_host(snapshot_floats_ * sizeof(float));
    snapshot_capacity_ = snapshot_floats_;
  }
  snapshot_rows_ =
      floats > 0 ? ctx.context_scratch.get<float>("compressor.snapshots", floats) : nullptr;
}

void DeviceCompressors::record_snapshots(const DeviceForwardContext& ctx, int64_t layer,
                                         bool indexer, const CompressorRings::Ring& ring,
                                         const float* kv, const float* gate) const {
  const int64_t m = ctx.config.compress_ratio(layer), width = ring.width;
  for (size_t i = 0; i < snapshots_.size(); ++i) {
    const int64_t offset =
        snapshot_offsets_[snapshot_index(i, layer, indexer, ctx.config.num_layers)];
    if (offset < 0) {
      continue;
    }
    // The previous window: positions [L - m, L); those before the step are in the ring (its
    // window's rows are contiguous there), the others are the step's rows. Into the staging
    // buffer: kv [m, width], then gate [m, width].
    const Chunk& ch = chunks_[snapshots_[i].chunk];
    const int64_t length = snapshots_[i].length;
    const int64_t first = length - m, split = std::max(first, ch.first_position);
    float* dst_kv = snapshot_rows_ + offset;
    float* dst_gate = dst_kv + m * width;
    const auto stage = [&](bool from_ring, int64_t row, int64_t rows, int64_t dst_row) {
      const auto bytes = static_cast<size_t>(rows * width) * sizeof(float);
      ctx.device.copy(dst_kv + dst_row * width, (from_ring ? ring.kv : kv) + row * width, bytes,
                      device::CopyKind::kDeviceToDevice, ctx.stream);
      ctx.device.copy(dst_gate + dst_row * width, (from_ring ? ring.gate : gate) + row * width,
                      bytes, device::CopyKind::kDeviceToDevice, ctx.stream);
    };
    if (split > first) {
      stage(true, CompressorRings::row(ch.slot, first, m), split - first, 0);
    }
    stage(false, ch.first_row + split - ch.first_position, length - split, split - first);
  }
}

void DeviceCompressors::download(const DeviceForwardContext& ctx) {
  if (snapshot_floats_ > 0) {
    ctx.device.copy(snapshot_host_.get(), snapshot_rows_, snapshot_floats_ * sizeof(float),
                    device::CopyKind::kDeviceToHost, ctx.stream);
  }
}

void DeviceCompressors::finish(const ModelConfig& config, const ForwardBatch& batch) {
  for (size_t i = 0; i < snapshots_.size(); ++i) {
    SequenceKv& kv = *chunks_[snapshots_[i].chunk].kv;
    for (int64_t l = 0; l < config.num_layers; ++l) {
      const int64_t m = config.compress_ratio(l);
      for (const bool indexer : {false, true}) {
        if (m == 0 || (indexer && m != 4)) {
          continue;
        }
        CompressorSnapshot& out = kv.snapshot_compressor(l, indexer, snapshots_[i].length);
        out = {};
        const int64_t offset = snapshot_offsets_[snapshot_index(i, l, indexer, config.num_layers)];
        if (offset < 0) {
          continue;
        }
        const float* rows = reinterpret_cast<const float*>(snapshot_host_.get()) + offset;
        const int64_t half = m * (indexer ? 2 * config.index_head_dim : 2 * config.head_dim);
        out.has_previous = true;
        out.prev_kv.assign(rows, rows + half);
        out.prev_gate.assign(rows + half, rows + 2 * half);
      }
    }
  }
  for (const SequenceChunk& c : batch.chunks) {
    c.kv->set_ring_primed();
  }
}

}  // namespace tessera::dsv4
