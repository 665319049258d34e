#include "device_run.hpp"

#include <algorithm>
#include <vector>

#include "sequence_extent.hpp"
#include "tessera/plugin_sdk.hpp"

namespace tessera::reference {
namespace {

using sdk::fail;
using sdk::ok;

constexpr size_t kAlign = 256;

size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// Rows one query of the sequence attends, at most: its window and its compressed rows.
int64_t rows_per_query(const ts_attention_layer& layer, const SequenceExtent& e) {
  const int64_t window = std::min<int64_t>(layer.window, e.n_window);
  const int64_t compressed = layer.compress_ratio == 4
                                 ? std::min<int64_t>(layer.index_topk, e.n_compressed)
                                 : e.n_compressed;
  return window + compressed;
}

ts_status check_pointers(const ts_reference_cuda_api& api, const ts_attention_layer& layer,
                         const ts_attention_inputs& in, const ts_attention_outputs& out,
                         const void* workspace) {
  const bool csa = layer.compress_ratio == 4;
  struct Pointer {
    const void* p;
    const char* name;
    bool needed;
  };
  const Pointer pointers[] = {{in.q, "q", true},
                              {out.out, "out", true},
                              {in.kv_pool, "kv_pool", true},
                              {layer.attn_sink, "attn_sink", true},
                              {workspace, "workspace", true},
                              {in.index_q, "index_q", csa},
                              {in.index_w, "index_w", csa},
                              {in.index_pool, "index_pool", csa},
                              {out.selected, "selected", csa && out.selected != nullptr}};
  for (const Pointer& ptr : pointers) {
    if (!ptr.needed) continue;
    if (ptr.p == nullptr) return fail(TS_ERR_INVALID_ARGUMENT, std::string(ptr.name) + " is null");
    if (!api.is_device_memory(ptr.p))
      return fail(TS_ERR_INVALID_ARGUMENT,
                  std::string(ptr.name) + " is host memory; a CUDA device needs device memory");
  }
  if (in.kv.table == nullptr || in.kv.main_layout == nullptr ||
      (csa && in.kv.indexer_layout == nullptr))
    return fail(TS_ERR_INVALID_ARGUMENT,
                "the kv-cache reader (format table and layouts) is missing");
  return ok();
}

ts_status load(const ts_kv_reader& kv, const ts_kv_layout* layout, const uint8_t* pool,
               const int64_t* slots, int64_t n, float* rows, ts_device device) {
  if (n == 0) return ok();
  return kv.table->load(kv.instance, layout, pool, slots, n, rows, device);
}

}  // namespace

DeviceSections device_sections(const ts_attention_layer& layer, const ts_attention_sequence& seq) {
  const SequenceExtent e = extent_of(layer, seq);
  const bool csa = layer.compress_ratio == 4;
  const auto f = sizeof(float);
  DeviceSections s{};
  s.rows = 0;
  s.keys = aligned(static_cast<size_t>((e.n_window + e.n_compressed) * layer.head_dim) * f);
  const size_t keys = csa ? static_cast<size_t>(e.n_compressed * layer.index_head_dim) * f : 0;
  s.scores = s.keys + aligned(keys);
  const size_t scores = csa ? static_cast<size_t>(seq.n_queries * e.n_compressed) * f : 0;
  s.candidates = s.scores + aligned(scores);
  const size_t choices = csa ? static_cast<size_t>(seq.n_queries) * layer.index_topk * 4 : 0;
  s.picks = s.candidates + aligned(choices);
  s.total = s.picks + aligned(choices);
  return s;
}

size_t device_workspace_bytes(const ts_attention_layer& layer, const ts_attention_batch& batch) {
  size_t most = 0;
  for (int32_t s = 0; s < batch.n_sequences; ++s)
    most = std::max(most, device_sections(layer, batch.sequences[s]).total);
  return most;
}

std::string check_rows_fit(const ts_attention_layer& layer, const ts_attention_batch& batch,
                           int64_t max_rows) {
  for (int32_t s = 0; s < batch.n_sequences; ++s) {
    const int64_t rows = rows_per_query(layer, extent_of(layer, batch.sequences[s]));
    if (rows > max_rows)
      return "sequence " + std::to_string(s) + ": a query attends up to " + std::to_string(rows) +
             " rows; the device's shared memory holds the weights of " + std::to_string(max_rows);
  }
  return "";
}

ts_status run_on_device(const ts_reference_cuda_api& api, const ts_attention_layer& layer,
                        const ts_attention_batch& batch, const ts_attention_inputs& in,
                        ts_attention_outputs& out, void* workspace, size_t workspace_bytes,
                        ts_device device) {
  const size_t needed = device_workspace_bytes(layer, batch);
  if (workspace_bytes < needed)
    return fail(TS_ERR_INVALID_ARGUMENT, "workspace of " + std::to_string(workspace_bytes) +
                                             " bytes; plan() asked for " + std::to_string(needed));
  if (ts_status s = check_pointers(api, layer, in, out, workspace); s.code != TS_OK) return s;
  const bool csa = layer.compress_ratio == 4;
  const ts_reference_cuda_layer L{layer.n_heads,        layer.head_dim,      layer.window,
                                  layer.compress_ratio, layer.index_n_heads, layer.index_head_dim,
                                  layer.index_topk,     layer.softmax_scale};
  const int64_t H = layer.n_heads, D = layer.head_dim;
  const int64_t IH = layer.index_n_heads, ID = layer.index_head_dim;
  auto* base = static_cast<uint8_t*>(workspace);
  std::vector<int64_t> slots;
  int64_t scored = 0;
  for (int32_t s = 0; s < batch.n_sequences; ++s) {
    const ts_attention_sequence& seq = batch.sequences[s];
    const SequenceExtent e = extent_of(layer, seq);
    const DeviceSections w = device_sections(layer, seq);
    auto* rows = reinterpret_cast<float*>(base + w.rows);
    auto* keys = reinterpret_cast<float*>(base + w.keys);
    // Window rows then compressed entries, decoded by one load of the format.
    slots.assign(seq.window_slots, seq.window_slots + e.n_window);
    slots.insert(slots.end(), seq.compressed_slots, seq.compressed_slots + e.n_compressed);
    if (ts_status st = load(in.kv, in.kv.main_layout, in.kv_pool, slots.data(),
                            static_cast<int64_t>(slots.size()), rows, device);
        st.code != TS_OK)
      return st;
    if (csa) {
      if (ts_status st = load(in.kv, in.kv.indexer_layout, in.index_pool, seq.indexer_slots,
                              e.n_compressed, keys, device);
          st.code != TS_OK)
        return st;
      for (int32_t i = 0; i < seq.n_queries; ++i)
        scored += std::min<int64_t>(e.n_compressed, (seq.first_position + i + 1) / 4);
    }
    const int64_t t = seq.query_offset;
    ts_reference_cuda_sequence S{};
    S.q = in.q + t * H * D;
    S.index_q = csa ? in.index_q + t * IH * ID : nullptr;
    S.index_w = csa ? in.index_w + t * IH : nullptr;
    S.sink = layer.attn_sink;
    S.out = out.out + t * H * D;
    S.selected = csa && out.selected != nullptr ? out.selected + t * layer.index_topk : nullptr;
    S.rows = rows;
    S.keys = keys;
    S.scores = reinterpret_cast<float*>(base + w.scores);
    S.candidates = reinterpret_cast<int32_t*>(base + w.candidates);
    S.picks = reinterpret_cast<int32_t*>(base + w.picks);
    S.first_position = seq.first_position;
    S.window_first_position = seq.window_first_position;
    S.n_window = e.n_window;
    S.n_compressed = e.n_compressed;
    S.n_queries = seq.n_queries;
    S.max_rows = static_cast<int32_t>(rows_per_query(layer, e));
    if (const char* why = api.enqueue_sequence(device.ordinal, device.stream, &L, &S);
        why != nullptr)
      return fail(TS_ERR_INTERNAL, std::string("reference attention on CUDA: ") + why);
  }
  out.entries_scored = scored;
  return ok();
}

}  // namespace tessera::reference
