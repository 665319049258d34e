#include "work_plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace tessera::mma {
namespace {

constexpr size_t kAlign = 256;
// Fewest attention tiles one block takes before a token's rows are split over several blocks:
// a split costs a [heads, head_dim] fp32 partial written and read back (combine kernel).
constexpr int64_t kMinTilesPerSplit = 4;
constexpr int64_t kMinIndexerTilesPerItem = 2;  // amortizes the block's query load
constexpr int64_t kMaxIndexerTilesPerItem = 64;

size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool supported_head_dim(int32_t d) { return d == 64 || d == 128 || d == 256 || d == 512; }
bool supported_index_dim(int32_t d) { return d == 32 || d == 64 || d == 128; }

int32_t choose_heads_per_block(int32_t n_heads, int32_t head_dim, const DeviceLimits& limits) {
  int32_t heads = 16;
  while (heads < n_heads && heads < kMaxHeadsPerBlock) {
    heads *= 2;
  }
  while (heads > 16 &&
         attention_smem_bytes(heads, head_dim) > static_cast<size_t>(limits.smem_per_block)) {
    heads /= 2;
  }
  return heads;
}

int64_t blocks_per_sm(size_t smem, const DeviceLimits& limits) {
  return std::max<int64_t>(1, limits.smem_per_sm / static_cast<int64_t>(smem + 1024));
}

std::string str(int64_t v) { return std::to_string(v); }

int64_t record_offset(const ts_kv_layout& l, int64_t slot) {
  return slot / l.entries_per_page * static_cast<int64_t>(l.page_bytes) +
         static_cast<int64_t>(l.payload_offset) +
         slot % l.entries_per_page * static_cast<int64_t>(l.payload_stride);
}

// Entries of each workspace section.
struct SectionSizes {
  int64_t tasks = 0, attention_items = 0, combine_items = 0, indexer_items = 0;
  int64_t window_offsets = 0, comp_offsets = 0, index_offsets = 0;
  int64_t scores = 0, selected_rows = 0, partials = 0;
};

WorkspaceLayout lay_out(const SectionSizes& n, const ts_attention_layer& layer,
                        int32_t heads_per_block) {
  WorkspaceLayout w;
  size_t off = 0;
  auto section = [&off](int64_t count, size_t bytes) {
    const size_t at = off;
    off += align_up(static_cast<size_t>(count) * bytes);
    return at;
  };
  const auto heads = static_cast<size_t>(heads_per_block);
  w.counts = section(1, sizeof(WorkCounts));
  w.tasks = section(n.tasks, sizeof(TokenTask));
  w.attention_items = section(n.attention_items, sizeof(AttentionItem));
  w.combine_items = section(n.combine_items, sizeof(CombineItem));
  w.indexer_items = section(n.indexer_items, sizeof(IndexerItem));
  w.window_offsets = section(n.window_offsets, sizeof(int64_t));
  w.comp_offsets = section(n.comp_offsets, sizeof(int64_t));
  w.index_offsets = section(n.index_offsets, sizeof(int64_t));
  w.metadata_bytes = off;
  w.scores = section(n.scores, sizeof(float));
  w.selected = section(n.selected_rows, static_cast<size_t>(layer.index_topk) * 4);
  w.partial_o = section(n.partials, heads * layer.head_dim * sizeof(float));
  w.partial_ml = section(n.partials, heads * 2 * sizeof(float));
  w.total = off;
  return w;
}

// The block sizes of the layer's kernels.
void choose_blocks(WorkPlan& plan, const ts_attention_layer& layer, const DeviceLimits& limits) {
  const bool csa = layer.compress_ratio == 4;
  plan.heads_per_block = choose_heads_per_block(layer.n_heads, layer.head_dim, limits);
  plan.head_groups = static_cast<int32_t>(ceil_div(layer.n_heads, plan.heads_per_block));
  plan.attention_smem = attention_smem_bytes(plan.heads_per_block, layer.head_dim);
  plan.indexer_smem = csa ? indexer_smem_bytes(layer.index_head_dim) : 0;
  plan.topk_smem = csa ? topk_smem_bytes(layer.index_topk) : 0;
}

}  // namespace

size_t attention_smem_bytes(int32_t heads_per_block, int32_t head_dim) {
  const size_t warps = static_cast<size_t>(heads_per_block) / 8;          // 2 warps per 16 heads
  return static_cast<size_t>(heads_per_block) * head_dim * 2              // q tile, bf16
         + 2 * static_cast<size_t>(kAttentionTileRows) * head_dim * 2     // 2 kv stages, bf16
         + static_cast<size_t>(heads_per_block) * kAttentionTileRows * 2  // probabilities, bf16
         + 2 * warps * 16 * sizeof(float);  // row max / row sum exchange
}

size_t indexer_smem_bytes(int32_t index_head_dim) {
  return static_cast<size_t>(kMaxIndexHeads) * index_head_dim * 2             // q, bf16
         + 2 * static_cast<size_t>(kIndexerTileKeys) * index_head_dim * 2     // 2 key stages
         + static_cast<size_t>(kIndexerThreads / 32) * kIndexerTileKeys * 4;  // per-warp sums
}

size_t topk_smem_bytes(int32_t topk) {
  size_t pow2 = 1;
  while (pow2 < static_cast<size_t>(std::max(topk, 1))) {
    pow2 *= 2;
  }
  return 256 * 4 + (kTopkThreads / 32) * 4 + 4 * 4 + pow2 * 8;  // histogram, scan, scalars, keys
}

std::string check_layer(const ts_attention_layer& layer, const DeviceLimits& limits) {
  const int32_t m = layer.compress_ratio;
  if (layer.n_heads < 1) {
    return "n_heads must be >= 1, got " + str(layer.n_heads);
  }
  if (!supported_head_dim(layer.head_dim)) {
    return "head_dim must be 64, 128, 256 or 512 for the mma kernels, got " + str(layer.head_dim);
  }
  if (layer.rope_dim < 0 || layer.rope_dim > layer.head_dim) {
    return "rope_dim must be in [0, head_dim], got " + str(layer.rope_dim);
  }
  if (layer.window < 1) {
    return "window must be >= 1, got " + str(layer.window);
  }
  if (m != 0 && m != 4 && m != 128) {
    return "compress_ratio must be 0, 4 or 128, got " + str(m);
  }
  if (!(layer.softmax_scale > 0.0f) || !std::isfinite(layer.softmax_scale)) {
    return "softmax_scale must be finite and > 0";
  }
  if (layer.attn_sink == nullptr) {
    return "attn_sink is null (needs [n_heads] fp32 on the device)";
  }
  if (m == 4) {
    if (layer.index_n_heads < 1 || layer.index_n_heads > kMaxIndexHeads) {
      return "index_n_heads must be in [1, 64], got " + str(layer.index_n_heads);
    }
    if (!supported_index_dim(layer.index_head_dim)) {
      return "index_head_dim must be 32, 64 or 128, got " + str(layer.index_head_dim);
    }
    if (layer.index_topk < 1 || layer.index_topk > kMaxTopk) {
      return "index_topk must be in [1, 4096], got " + str(layer.index_topk);
    }
    if (indexer_smem_bytes(layer.index_head_dim) > static_cast<size_t>(limits.smem_per_block)) {
      return "the indexer needs " +
             str(static_cast<int64_t>(indexer_smem_bytes(layer.index_head_dim))) +
             " bytes of shared memory per block; the device allows " + str(limits.smem_per_block);
    }
  }
  const int32_t heads = choose_heads_per_block(layer.n_heads, layer.head_dim, limits);
  const size_t need = attention_smem_bytes(heads, layer.head_dim);
  if (need > static_cast<size_t>(limits.smem_per_block)) {
    return "head_dim " + str(layer.head_dim) + " needs " + str(static_cast<int64_t>(need)) +
           " bytes of shared memory per block; the device allows " + str(limits.smem_per_block);
  }
  return "";
}

std::string check_batch(const ts_attention_layer& layer, const ts_attention_batch& batch) {
  if (batch.n_sequences < 0 || batch.n_tokens < 0) {
    return "negative n_sequences or n_tokens";
  }
  if (batch.n_sequences > 0 && batch.sequences == nullptr) {
    return "sequences is null";
  }
  const int32_t m = layer.compress_ratio;
  int64_t total_slots = 0;  // offsets are indexed with int32 on the device
  for (int32_t s = 0; s < batch.n_sequences; ++s) {
    const ts_attention_sequence& seq = batch.sequences[s];
    const std::string where = "sequence " + str(s) + ": ";
    if (seq.n_queries <= 0) {
      return where + "n_queries must be > 0";
    }
    if (seq.query_offset < 0 || int64_t{seq.query_offset} + seq.n_queries > batch.n_tokens) {
      return where + "queries out of range";
    }
    if (seq.first_position < 0 || seq.window_first_position < 0) {
      return where + "negative position";
    }
    const int64_t lowest = std::max<int64_t>(0, seq.first_position - layer.window + 1);
    if (seq.window_first_position > lowest) {
      return where + "window slots start at position " + str(seq.window_first_position) +
             " but position " + str(lowest) + " is needed";
    }
    const int64_t last = seq.first_position + seq.n_queries - 1;
    if (last - seq.window_first_position + 1 > std::numeric_limits<int32_t>::max() / 2) {
      return where + "too many window slots";
    }
    if (seq.window_slots == nullptr) {
      return where + "window_slots is null";
    }
    if (seq.n_compressed < 0) {
      return where + "negative n_compressed";
    }
    if (m > 0 && seq.n_compressed > std::numeric_limits<int32_t>::max() / 2) {
      return where + "too many compressed entries";
    }
    if (m > 0 && seq.n_compressed > 0 && seq.compressed_slots == nullptr) {
      return where + "compressed_slots is null";
    }
    if (m == 4 && seq.n_compressed > 0 && seq.indexer_slots == nullptr) {
      return where + "indexer_slots is null";
    }
    total_slots += last - seq.window_first_position + 1 + (m > 0 ? seq.n_compressed : 0);
    if (total_slots > std::numeric_limits<int32_t>::max() / 2) {
      return "the batch references more than 2^30 cache slots; split it";
    }
  }
  return "";
}

WorkPlan build_work_plan(const ts_attention_layer& layer, const ts_attention_batch& batch,
                         const DeviceLimits& limits) {
  WorkPlan plan;
  const int32_t m = layer.compress_ratio;
  const bool csa = m == 4;
  choose_blocks(plan, layer, limits);

  // ---- one task per query token
  int32_t n_window_slots = 0, n_comp_slots = 0;
  for (int32_t s = 0; s < batch.n_sequences; ++s) {
    const ts_attention_sequence& seq = batch.sequences[s];
    const int64_t last = seq.first_position + seq.n_queries - 1;
    SequenceSlots slots;
    slots.window_base = n_window_slots;
    slots.n_window = static_cast<int32_t>(last - seq.window_first_position + 1);
    slots.comp_base = n_comp_slots;
    slots.n_comp =
        m > 0 ? static_cast<int32_t>(std::min<int64_t>(seq.n_compressed, (last + 1) / m)) : 0;
    n_window_slots += slots.n_window;
    n_comp_slots += slots.n_comp;
    plan.sequences.push_back(slots);
    for (int32_t i = 0; i < seq.n_queries; ++i) {
      TokenTask task{};
      task.position = seq.first_position + i;
      const int64_t lo = std::max<int64_t>(0, task.position - layer.window + 1);
      task.token = seq.query_offset + i;
      task.n_window = static_cast<int32_t>(task.position - lo + 1);
      task.window_base = slots.window_base + static_cast<int32_t>(lo - seq.window_first_position);
      task.comp_base = slots.comp_base;
      task.n_visible =
          m > 0 ? static_cast<int32_t>(std::min<int64_t>(seq.n_compressed, (task.position + 1) / m))
                : 0;
      task.n_comp_rows = csa ? std::min(layer.index_topk, task.n_visible) : task.n_visible;
      task.score_base = plan.n_scores;
      if (csa) {
        plan.n_scores += task.n_visible;
      }
      plan.tasks.push_back(task);
    }
  }
  plan.window_offsets.assign(static_cast<size_t>(n_window_slots), 0);
  plan.comp_offsets.assign(static_cast<size_t>(n_comp_slots), 0);
  plan.index_offsets.assign(csa ? static_cast<size_t>(n_comp_slots) : 0, 0);

  // ---- attention: split long row lists so that the grid fills the device
  const int64_t target_blocks = limits.sm_count * blocks_per_sm(plan.attention_smem, limits);
  int64_t total_tiles = 0;
  for (const TokenTask& t : plan.tasks) {
    total_tiles += ceil_div(t.n_window + t.n_comp_rows, kAttentionTileRows) * plan.head_groups;
  }
  const int64_t tiles_per_item =
      std::max(kMinTilesPerSplit, ceil_div(total_tiles, std::max<int64_t>(1, target_blocks)));
  for (int32_t ti = 0; ti < static_cast<int32_t>(plan.tasks.size()); ++ti) {
    const TokenTask& t = plan.tasks[ti];
    const int64_t rows = t.n_window + t.n_comp_rows;
    const int64_t tiles = ceil_div(rows, kAttentionTileRows);
    const int64_t per = ceil_div(tiles, ceil_div(tiles, tiles_per_item));
    const int64_t splits = ceil_div(tiles, per);
    for (int32_t hg = 0; hg < plan.head_groups; ++hg) {
      const int32_t first = plan.n_partials;
      for (int64_t s = 0; s < splits; ++s) {
        AttentionItem item{};
        item.task = ti;
        item.head_group = hg;
        item.row_begin = static_cast<int32_t>(s * per * kAttentionTileRows);
        item.row_end = static_cast<int32_t>(std::min(rows, (s + 1) * per * kAttentionTileRows));
        item.partial = splits > 1 ? plan.n_partials++ : -1;
        plan.attention_items.push_back(item);
      }
      if (splits > 1) {
        plan.combine_items.push_back(CombineItem{ti, hg, first, static_cast<int32_t>(splits)});
      }
    }
  }

  // ---- indexer: only visible entries are scored (cost follows the real context)
  if (csa) {
    const int64_t target = limits.sm_count * blocks_per_sm(plan.indexer_smem, limits);
    int64_t total_key_tiles = 0;
    for (const TokenTask& t : plan.tasks) {
      total_key_tiles += ceil_div(t.n_visible, kIndexerTileKeys);
    }
    const int64_t tiles_per_item =
        std::clamp(ceil_div(total_key_tiles, std::max<int64_t>(1, target)), kMinIndexerTilesPerItem,
                   kMaxIndexerTilesPerItem);
    for (int32_t ti = 0; ti < static_cast<int32_t>(plan.tasks.size()); ++ti) {
      const TokenTask& t = plan.tasks[ti];
      const int64_t tiles = ceil_div(t.n_visible, kIndexerTileKeys);
      if (tiles == 0) {
        continue;
      }
      const int64_t per = ceil_div(tiles, ceil_div(tiles, tiles_per_item));
      for (int64_t begin = 0; begin < tiles; begin += per) {
        IndexerItem item{};
        item.task = ti;
        item.key_begin = static_cast<int32_t>(begin * kIndexerTileKeys);
        item.key_end =
            static_cast<int32_t>(std::min<int64_t>(t.n_visible, (begin + per) * kIndexerTileKeys));
        plan.entries_scored += item.key_end - item.key_begin;
        plan.indexer_items.push_back(item);
      }
    }
  }

  // ---- workspace sections
  auto count = [](const auto& v) { return static_cast<int32_t>(v.size()); };
  plan.grids = {count(plan.tasks), count(plan.attention_items), count(plan.combine_items),
                count(plan.indexer_items)};
  SectionSizes n;
  n.tasks = count(plan.tasks);
  n.attention_items = count(plan.attention_items);
  n.combine_items = count(plan.combine_items);
  n.indexer_items = count(plan.indexer_items);
  n.window_offsets = count(plan.window_offsets);
  n.comp_offsets = count(plan.comp_offsets);
  n.index_offsets = count(plan.index_offsets);
  n.scores = plan.n_scores;
  n.selected_rows = csa ? count(plan.tasks) : 0;
  n.partials = plan.n_partials;
  plan.workspace = lay_out(n, layer, plan.heads_per_block);
  return plan;
}

std::string check_shape(const ts_attention_shape& shape) {
  if (shape.struct_size < sizeof(ts_attention_shape)) {
    return "ts_attention_shape.struct_size is " + str(shape.struct_size) + ", needs " +
           str(static_cast<int64_t>(sizeof(ts_attention_shape)));
  }
  if (shape.n_tokens < 1 || shape.n_tokens > (1 << 20)) {
    return "shape n_tokens must be in [1, 2^20], got " + str(shape.n_tokens);
  }
  if (shape.n_slots < 0 || shape.n_slots > (int64_t{1} << 30)) {
    return "shape n_slots must be in [0, 2^30], got " + str(shape.n_slots);
  }
  if (shape.n_visible < 0 || shape.n_visible > (int64_t{1} << 30)) {
    return "shape n_visible must be in [0, 2^30], got " + str(shape.n_visible);
  }
  return "";
}

WorkPlan shaped_frame(const ts_attention_layer& layer, const ts_attention_shape& shape,
                      const DeviceLimits& limits) {
  WorkPlan f;
  choose_blocks(f, layer, limits);
  const bool csa = layer.compress_ratio == 4;
  const int64_t T = shape.n_tokens, groups = f.head_groups;
  // build_work_plan's splits give at most target + (one per token and head group) attention
  // items (a token's splits are ceil(tiles / tiles_per_item) and tiles_per_item >= total tiles /
  // target), and at most target + ceil(key tiles / 64) + (one per token) indexer items.
  const int64_t target = limits.sm_count * blocks_per_sm(f.attention_smem, limits);
  const int64_t attention_items = target + groups * T;
  int64_t indexer_items = 0;
  if (csa) {
    const int64_t key_tiles = ceil_div(shape.n_visible, kIndexerTileKeys) + T;
    indexer_items = limits.sm_count * blocks_per_sm(f.indexer_smem, limits) +
                    ceil_div(key_tiles, kMaxIndexerTilesPerItem) + T;
  }
  f.grids = {static_cast<int32_t>(T), static_cast<int32_t>(attention_items),
             static_cast<int32_t>(groups * T), static_cast<int32_t>(indexer_items)};
  SectionSizes n;
  n.tasks = T;
  n.attention_items = attention_items;
  n.combine_items = groups * T;
  n.indexer_items = indexer_items;
  n.window_offsets = shape.n_slots;
  n.comp_offsets = layer.compress_ratio > 0 ? shape.n_slots : 0;
  n.index_offsets = csa ? shape.n_slots : 0;
  n.scores = csa ? shape.n_visible : 0;
  n.selected_rows = csa ? T : 0;
  n.partials = attention_items;
  f.workspace = lay_out(n, layer, f.heads_per_block);
  return f;
}

std::string fit_to_shape(WorkPlan& plan, const WorkPlan& frame, const ts_attention_shape& shape) {
  const auto tokens = static_cast<int64_t>(plan.tasks.size());
  const auto slots = static_cast<int64_t>(plan.window_offsets.size() + plan.comp_offsets.size());
  int64_t visible = 0;
  for (const TokenTask& t : plan.tasks) {
    visible += t.n_visible;
  }
  if (tokens > shape.n_tokens) {
    return "the batch has " + str(tokens) + " query tokens; the shape holds " + str(shape.n_tokens);
  }
  if (slots > shape.n_slots) {
    return "the batch references " + str(slots) + " cache slots; the shape holds " +
           str(shape.n_slots);
  }
  if (visible > shape.n_visible) {
    return "the batch's tokens see " + str(visible) + " compressed entries; the shape holds " +
           str(shape.n_visible);
  }
  for (int32_t token = static_cast<int32_t>(tokens); token < shape.n_tokens; ++token) {
    TokenTask pad{};  // no rows: its output is zero
    pad.token = token;
    pad.score_base = plan.n_scores;
    const auto task = static_cast<int32_t>(plan.tasks.size());
    plan.tasks.push_back(pad);
    for (int32_t hg = 0; hg < plan.head_groups; ++hg) {
      plan.attention_items.push_back(AttentionItem{task, hg, 0, 0, -1});
    }
  }
  const Grids& g = frame.grids;
  if (static_cast<int64_t>(plan.attention_items.size()) > g.attention_items ||
      static_cast<int64_t>(plan.combine_items.size()) > g.combine_items ||
      static_cast<int64_t>(plan.indexer_items.size()) > g.indexer_items ||
      plan.n_partials > g.attention_items) {
    return "internal: the work split exceeds the shape's grids (" +
           str(static_cast<int64_t>(plan.attention_items.size())) + " attention items for " +
           str(g.attention_items) + ")";
  }
  plan.grids = g;
  plan.workspace = frame.workspace;
  return "";
}

std::string fill_offsets(WorkPlan& plan, const ts_attention_layer& layer,
                         const ts_attention_batch& batch, const ts_kv_layout& main_layout,
                         const ts_kv_layout* index_layout) {
  for (int32_t s = 0; s < batch.n_sequences; ++s) {
    const ts_attention_sequence& seq = batch.sequences[s];
    const SequenceSlots& slots = plan.sequences[static_cast<size_t>(s)];
    for (int32_t i = 0; i < slots.n_window; ++i) {
      const int64_t slot = seq.window_slots[i];
      if (slot < 0) {
        return "sequence " + str(s) + ": negative window slot at index " + str(i);
      }
      plan.window_offsets[static_cast<size_t>(slots.window_base) + static_cast<size_t>(i)] =
          record_offset(main_layout, slot);
    }
    for (int32_t k = 0; k < slots.n_comp; ++k) {
      const int64_t slot = seq.compressed_slots[k];
      if (slot < 0) {
        return "sequence " + str(s) + ": negative compressed slot at entry " + str(k);
      }
      plan.comp_offsets[static_cast<size_t>(slots.comp_base) + static_cast<size_t>(k)] =
          record_offset(main_layout, slot);
      if (layer.compress_ratio == 4) {
        const int64_t islot = seq.indexer_slots[k];
        if (islot < 0) {
          return "sequence " + str(s) + ": negative indexer slot at entry " + str(k);
        }
        plan.index_offsets[static_cast<size_t>(slots.comp_base) + static_cast<size_t>(k)] =
            record_offset(*index_layout, islot);
      }
    }
  }
  return "";
}

void pack_metadata(const WorkPlan& plan, uint8_t* out) {
  const WorkspaceLayout& w = plan.workspace;
  std::memset(out, 0, w.metadata_bytes);
  const WorkCounts counts{static_cast<int32_t>(plan.tasks.size()),
                          static_cast<int32_t>(plan.attention_items.size()),
                          static_cast<int32_t>(plan.combine_items.size()),
                          static_cast<int32_t>(plan.indexer_items.size())};
  std::memcpy(out + w.counts, &counts, sizeof counts);
  auto put = [out](size_t at, const auto& v) {
    if (!v.empty()) {
      std::memcpy(out + at, v.data(), v.size() * sizeof(v[0]));
    }
  };
  put(w.tasks, plan.tasks);
  put(w.attention_items, plan.attention_items);
  put(w.combine_items, plan.combine_items);
  put(w.indexer_items, plan.indexer_items);
  put(w.window_offsets, plan.window_offsets);
  put(w.comp_offsets, plan.comp_offsets);
  put(w.index_offsets, plan.index_offsets);
}

}  // namespace tessera::mma
