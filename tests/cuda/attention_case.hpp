// Random attention problems for the mma tests and benchmark: a layer, a batch of sequences whose
// window and compressed entries sit at scattered slots of bf16 cache pages (the layout of the
// "bf16" kv-cache plugin), queries, indexer queries and weights, sinks; and the CPU reference
// (plugins/attention_reference/reference_kernels.hpp) for any token.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/plugin_abi.h"

namespace tessera::cudatest {

struct SequenceSpec {
  int64_t first_position;
  int32_t n_queries;
  int32_t extra_window = 0;  // window slots start this many positions before the lowest needed
};

struct CaseSpec {
  std::string name;
  int32_t n_heads = 64, head_dim = 512, rope_dim = 64, window = 128, ratio = 0;
  int32_t index_heads = 64, index_dim = 128, topk = 512;
  int32_t entries_per_page = 64;
  std::vector<SequenceSpec> sequences;
  bool bf16_exact_q = true;  // queries exactly representable in bf16 (what the kernels multiply)
  bool heavy = false;        // too slow for the CPU emulator
  bool fp8_cache = false;    // kvcache_fp8's records instead of bf16 ones
};

struct HostCase {
  CaseSpec spec;
  ts_attention_layer layer{};  // attn_sink: set by the caller (device memory)
  ts_kv_layout main_layout{}, index_layout{};
  std::vector<uint8_t> main_pool, index_pool;  // bf16 or fp8 pages (spec.fp8_cache)
  std::vector<float> q;                        // [n_tokens, n_heads, head_dim]
  std::vector<float> index_q;                  // [n_tokens, index_heads, index_dim]
  std::vector<float> index_w;                  // [n_tokens, index_heads]
  std::vector<float> sink;                     // [n_heads]
  std::vector<ts_attention_sequence> sequences;
  std::vector<std::vector<int64_t>> window_slots, comp_slots, index_slots;
  int32_t n_tokens = 0;

  HostCase() = default;
  HostCase(HostCase&&) = default;  // slot vectors keep their buffers: sequences stay valid
  HostCase& operator=(HostCase&&) = default;
  HostCase(const HostCase&) = delete;

  ts_attention_batch batch() const;
  int64_t visible(int32_t seq, int64_t position) const;  // compressed entries visible to position
  int64_t cache_bytes_read() const;  // attention rows + indexer keys scored, in bytes
  double flops() const;              // q.k + p.v of attention + indexer q.k
};

// The layout kvcache_bf16's describe() gives for storage "bf16".
ts_kv_layout bf16_layout(int32_t stream, int32_t dim, int32_t rope_dim, int32_t entries_per_page);
// The layout kvcache_fp8's describe() gives (its own code: plugins/kvcache_fp8/fp8_layout.cpp).
ts_kv_layout fp8_layout(int32_t stream, int32_t dim, int32_t rope_dim, int32_t entries_per_page);

HostCase make_case(const CaseSpec& spec, uint64_t seed);

// The plugin's inputs for case c from its tensors in device memory (index ones null unless CSA);
// the kv reader gives the case's layouts.
ts_attention_inputs case_inputs(const HostCase& c, const float* q, const float* index_q,
                                const float* index_w, const uint8_t* main_pool,
                                const uint8_t* index_pool);

// Reference for one query token (sequence s, query i) through reference::attend_with_sink over
// the window rows and either all visible compressed entries (HCA) or `picks` (CSA).
void reference_attention(const HostCase& c, int32_t s, int32_t i, const std::vector<int32_t>& picks,
                         float* out /* [n_heads, head_dim] */);
// reference::indexer_select for that token (CSA).
std::vector<int32_t> reference_selection(const HostCase& c, int32_t s, int32_t i);
// The indexer score of every visible entry, in double (to judge near-ties).
std::vector<double> reference_scores(const HostCase& c, int32_t s, int32_t i);

float bf16_to_float(uint16_t h);
uint16_t float_to_bf16(float v);

}  // namespace tessera::cudatest
