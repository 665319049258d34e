#include "executor/weight_sharding.hpp"

#include <algorithm>
#include <bit>
#include <utility>
#include <vector>

#include "ops/gemm_nt.hpp"
#include "util/check.hpp"

namespace tessera {

namespace {

using dsv4::Tensor;

// t itself, or for a weight packed into panels (model/weight_panels.hpp) its rows, unpacked into
// `rows` (fp32 or bf16 as packed): what the slices below copy from.
const Tensor& in_rows(const Tensor& t, Tensor& rows) {
  if (!t.in_panels() && !t.in_bf16_panels()) {
    return t;
  }
  rows.shape = t.shape;
  const int64_t out = t.shape[0], in = t.shape[1], stride = in * ops::kWeightPanelWidth;
  auto unpack = [&](const auto& panels, auto& to) {
    to.resize(static_cast<size_t>(out * in));
    ops::unpack_weight_panels(panels.data(), stride, 0, out, in, to.data(), in);
  };
  if (t.in_panels()) {
    unpack(t.panels, rows.data);
  } else {
    unpack(t.bf16_panels, rows.bf16);
  }
  return rows;
}

// A tensor of `shape` whose values copy(from, to) takes from t's storage (fp32 or bf16).
template <typename Copy>
Tensor copied(const Tensor& t, std::vector<int64_t> shape, const Copy& copy) {
  Tensor s;
  s.shape = std::move(shape);
  if (t.in_bf16()) {
    copy(t.bf16, s.bf16);
  } else {
    copy(t.data, s.data);
  }
  return s;
}

// Rows [begin, begin + count) of a [rows, ...] tensor, in its storage (fp32 or bf16).
Tensor slice_rows(const Tensor& packed, int64_t begin, int64_t count) {
  Tensor unpacked;
  const Tensor& t = in_rows(packed, unpacked);
  TS_CHECK(!t.shape.empty() && begin + count <= t.shape[0], "row slice {}+{} of {} rows", begin,
           count, t.shape.empty() ? 0 : t.shape[0]);
  const int64_t row = t.numel() / t.shape[0];
  std::vector<int64_t> shape = t.shape;
  shape[0] = count;
  return copied(t, std::move(shape), [&](const auto& from, auto& to) {
    to.assign(from.begin() + begin * row, from.begin() + (begin + count) * row);
  });
}

// Columns [begin, begin + count) of a [rows, cols] tensor, in its storage (fp32 or bf16).
Tensor slice_columns(const Tensor& packed, int64_t begin, int64_t count) {
  Tensor unpacked;
  const Tensor& t = in_rows(packed, unpacked);
  TS_CHECK(t.shape.size() == 2 && begin + count <= t.shape[1], "column slice {}+{} of {}", begin,
           count, t.shape.size() == 2 ? t.shape[1] : 0);
  const int64_t rows = t.shape[0], cols = t.shape[1];
  return copied(t, {rows, count}, [&](const auto& from, auto& to) {
    to.resize(static_cast<size_t>(rows * count));
    for (int64_t r = 0; r < rows; ++r) {
      std::copy_n(from.begin() + r * cols + begin, count, to.begin() + r * count);
    }
  });
}

dsv4::Expert shard_expert(const dsv4::Expert& e, int rank, int ranks) {
  const int64_t inter = e.w1.shape[0], share = inter / ranks, begin = rank * share;
  dsv4::Expert s;
  s.w1 = slice_rows(e.w1, begin, share);
  s.w3 = slice_rows(e.w3, begin, share);
  s.w2 = slice_columns(e.w2, begin, share);
  return s;
}

void require_divisible(int64_t value, int ranks, const char* what) {
  TS_CHECK(value % ranks == 0,
           "tensor_parallel = {} does not divide {} ({}); choose a divisor of it", ranks, what,
           value);
}

}  // namespace

void check_tensor_parallel(const dsv4::ModelConfig& config, int ranks) {
  TS_CHECK(ranks >= 1, "tensor_parallel must be at least 1, got {}", ranks);
  require_divisible(config.num_heads, ranks, "num_attention_heads");
  require_divisible(config.o_groups, ranks, "o_groups");
  require_divisible(config.vocab_size, ranks, "vocab_size");
  require_divisible(config.moe_intermediate_size, ranks, "moe_intermediate_size");
}

void check_reduction_parts(const dsv4::ModelConfig& config, int ranks, int parts) {
  TS_CHECK(parts >= 1 && std::has_single_bit(static_cast<unsigned>(parts)),
           "executor.reduction_parts = {}: must be a power of two (1, 2, 4, ...)", parts);
  if (parts == 1) {
    return;  // off: one product per rank, whatever the ranks
  }
  TS_CHECK(parts % ranks == 0,
           "executor.reduction_parts = {} is not a multiple of tensor_parallel = {}: each rank "
           "must hold whole parts (use {} or a multiple)",
           parts, ranks, ranks);
  // Each rank's share of wo_b's input (whole output groups) and of every expert's intermediate
  // width is split into parts / ranks equal column ranges.
  const int64_t per_rank = parts / ranks;
  auto require = [&](int64_t width, const char* what) {
    TS_CHECK(width % per_rank == 0,
             "executor.reduction_parts = {} gives each of the {} rank(s) {} parts, which do not "
             "divide {} ({}); choose fewer parts",
             parts, ranks, per_rank, what, width);
  };
  require(config.o_groups * config.o_lora_rank / ranks, "wo_b's input on a rank");
  require(config.moe_intermediate_size / ranks, "an expert's width on a rank");
  require(config.moe_intermediate_size * config.n_shared_experts / ranks,
          "the shared expert's width on a rank");
}

dsv4::ModelWeights shard_model_weights(const dsv4::ModelConfig& config,
                                       const dsv4::ModelWeights& full, int rank, int ranks) {
  check_tensor_parallel(config, ranks);
  TS_CHECK(rank >= 0 && rank < ranks, "rank {} of {}", rank, ranks);
  const int64_t Dh = config.head_dim, OL = config.o_lora_rank;
  const int64_t heads = config.num_heads / ranks, h0 = rank * heads;
  const int64_t groups = config.o_groups / ranks, g0 = rank * groups;
  const int64_t vocab = config.vocab_size / ranks;

  dsv4::ModelWeights s;
  s.embed = full.embed;
  s.head = slice_rows(full.head, rank * vocab, vocab);
  s.norm = full.norm;
  s.hc_head_fn = full.hc_head_fn;
  s.hc_head_base = full.hc_head_base;
  s.hc_head_scale = full.hc_head_scale;
  s.layers.reserve(full.layers.size());
  for (const dsv4::Layer& layer : full.layers) {
    dsv4::Layer l;
    l.attn_norm = layer.attn_norm;
    l.ffn_norm = layer.ffn_norm;
    l.hc_attn = layer.hc_attn;
    l.hc_ffn = layer.hc_ffn;
    const dsv4::Attention& a = layer.attn;
    l.attn.attn_sink = slice_rows(a.attn_sink, h0, heads);
    l.attn.wq_a = a.wq_a;
    l.attn.q_norm = a.q_norm;
    l.attn.wq_b = slice_rows(a.wq_b, h0 * Dh, heads * Dh);
    l.attn.wkv = a.wkv;
    l.attn.kv_norm = a.kv_norm;
    l.attn.wo_a = slice_rows(a.wo_a, g0 * OL, groups * OL);
    l.attn.wo_b = slice_columns(a.wo_b, g0 * OL, groups * OL);
    l.attn.compressor = a.compressor;
    l.attn.indexer = a.indexer;
    const dsv4::Moe& m = layer.ffn;
    l.ffn.gate = m.gate;
    l.ffn.bias = m.bias;
    l.ffn.tid2eid = m.tid2eid;
    require_divisible(m.shared.w1.shape[0], ranks, "the shared expert's intermediate size");
    l.ffn.shared = shard_expert(m.shared, rank, ranks);
    l.ffn.experts.reserve(m.experts.size());
    for (const dsv4::Expert& e : m.experts) l.ffn.experts.push_back(shard_expert(e, rank, ranks));
    s.layers.push_back(std::move(l));
  }
  return s;
}

}  // namespace tessera
