#include "model/moe.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <span>
#include <vector>

#include "ops/compute_threads.hpp"
#include "ops/linear.hpp"
#include "ops/moe_routing.hpp"
#include "ops/swiglu.hpp"
#include "ops/tree_sum.hpp"
#include "tessera/simd_clones.hpp"
#include "util/check.hpp"
#include "util/uninitialized_vector.hpp"

namespace tessera::dsv4 {

namespace {

// One expert's share of a layer: rows of x (the shared expert: all tokens; a routed one: its
// tokens, gathered), its hidden activations and its output.
struct ExpertRun {
  const Expert* expert;
  const float* x;  // [rows, D]
  int64_t rows;
  float* y;  // [rows, D]
};

// Where part q of run i's down projection goes: run i's y for q = 0, else the same offset in part
// q's copy of the buffer the run writes (its shared / routed output).
struct PartOutputs {
  std::span<float* const> shared;  // [parts]: part q's [T, D] shared-expert output
  std::span<float* const> routed;  // [parts]: part q's [routed rows, D] results
  const float* routed_base;        // part 0's routed buffer (runs' y index into it)
  float* y(const ExpertRun& r, size_t run, size_t q) const {
    if (q == 0) {
      return r.y;
    }
    return run == 0 ? shared[q] : routed[q] + (r.y - routed_base);
  }
};

// dst += w * row over n values: the combine's inner loop, compiled per vector ISA (the tree's
// baseline is SSE2; this loop was ~0.6% of a 64-sequence step's samples there).
TS_SIMD_CLONES void add_scaled(float* dst, const float* row, float w, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    dst[i] += w * row[i];
  }
}

// y = w2 . swiglu(w1 x, w3 x) for every run (run 0: the shared expert): each step is one
// linear_group over all the experts, so the threads share the whole layer's GEMMs (a batch's
// routed experts have ~tokens * K / E rows each: too small to split one GEMM well) with one
// hand-off per step. With several parts, w2 runs once per column range of the hidden width.
void run_experts(const ModelConfig& config, const std::vector<ExpertRun>& runs, int64_t D,
                 const PartOutputs& outputs) {
  // Run i's [rows, I_i] gate and up activations start at hidden[i] in the layer's buffers (the
  // shared expert's I may differ from the routed ones').
  std::vector<int64_t> hidden(runs.size() + 1, 0);
  for (size_t i = 0; i < runs.size(); ++i) {
    hidden[i + 1] = hidden[i] + runs[i].rows * runs[i].expert->w1.shape[0];
  }
  // Every value is written by the products below: no zeroing (util/uninitialized_vector.hpp).
  UninitializedVector<float> gate(static_cast<size_t>(hidden.back())), up(gate.size());
  std::vector<ops::GemmNtArgs> gemms;
  for (size_t i = 0; i < runs.size(); ++i) {
    const ExpertRun& r = runs[i];
    const Expert& e = *r.expert;
    const int64_t I = e.w1.shape[0];
    gemms.push_back(ops::weight_product(r.x, r.rows, D, e.w1, gate.data() + hidden[i], I));
    gemms.push_back(ops::weight_product(r.x, r.rows, D, e.w3, up.data() + hidden[i], I));
  }
  ops::linear_group(gemms);
  const auto limit = static_cast<float>(config.swiglu_limit);
  const auto total = static_cast<int64_t>(gate.size());
  constexpr int64_t kPerItem = 4096;
  ops::parallel_for((total + kPerItem - 1) / kPerItem, ops::compute_threads(), [&](int64_t c) {
    const int64_t first = c * kPerItem;
    ops::swiglu(gate.data() + first, up.data() + first, std::min(kPerItem, total - first), limit);
  });
  gemms.clear();
  const size_t parts = outputs.shared.size();
  for (size_t i = 0; i < runs.size(); ++i) {
    const ExpertRun& r = runs[i];
    const int64_t I = r.expert->w1.shape[0], width = I / static_cast<int64_t>(parts);
    for (size_t q = 0; q < parts; ++q) {
      const ops::GemmNtArgs whole = ops::weight_product(gate.data() + hidden[i], r.rows, I,
                                                        r.expert->w2, outputs.y(r, i, q), D);
      gemms.push_back(
          parts == 1 ? whole : ops::input_columns(whole, static_cast<int64_t>(q) * width, width));
    }
  }
  ops::linear_group(gemms);
}

}  // namespace

void moe_forward(const ModelConfig& config, const Moe& moe, bool hash_layer, const float* x,
                 const int32_t* token_ids, int64_t tokens, float* out, int parts) {
  TS_CHECK(parts >= 1, "moe: {} reduction parts", parts);
  const int64_t D = config.hidden_size, E = config.n_routed_experts, K = config.experts_per_token;
  std::vector<float> scores(static_cast<size_t>(tokens * E));
  ops::linear(x, tokens, moe.gate, scores.data());

  // Routing, each token alone (ops/moe_routing.hpp): its K (expert, weight) pairs into picked /
  // picked_weight [T, K]; then grouped by expert in token order. A bad token id or table entry
  // is reported for the lowest such token.
  std::vector<int32_t> picked(static_cast<size_t>(tokens * K));
  std::vector<float> picked_weight(picked.size());
  ops::MoeRouting routing{E, K, moe.bias ? moe.bias->ptr() : nullptr};
  if (hash_layer) {
    routing.tid2eid = moe.tid2eid.data();
    routing.table_size = static_cast<int64_t>(moe.tid2eid.size());
    routing.token_ids = token_ids;
  }
  routing.scaling = config.routed_scaling_factor;
  const int64_t bad =
      ops::route_tokens(routing, scores.data(), tokens, picked.data(), picked_weight.data());
  if (bad < tokens) {
    const int64_t t = bad;
    const int64_t id = token_ids[t];
    TS_CHECK(!hash_layer || (id >= 0 && id * K < static_cast<int64_t>(moe.tid2eid.size())),
             "hash routing: token id {} outside tid2eid", id);
    const int32_t* chosen = picked.data() + t * K;
    const int32_t e = *std::find_if(chosen, chosen + K, [&](int32_t v) { return v < 0 || v >= E; });
    TS_CHECK(false, "routing picked expert {} of {}", e, E);
  }
  std::vector<std::vector<int64_t>> rows_of(static_cast<size_t>(E));
  std::vector<std::vector<float>> weight_of(static_cast<size_t>(E));
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t k = 0; k < K; ++k) {
      const int32_t e = picked[static_cast<size_t>(t * K + k)];
      rows_of[e].push_back(t);
      weight_of[e].push_back(picked_weight[static_cast<size_t>(t * K + k)]);
    }
  }

  // The shared expert writes `out`; the routed ones (ascending) write their own rows, which are
  // then added into `out` token by token in expert order: the same additions in the same order
  // whatever the thread split.
  std::vector<ExpertRun> runs{{&moe.shared, x, tokens, out}};
  std::vector<int64_t> first(static_cast<size_t>(E) + 1, 0);
  for (int64_t e = 0; e < E; ++e) {
    first[e + 1] = first[e] + static_cast<int64_t>(rows_of[e].size());
  }
  // Each routed row is gathered once and its result written once: no zeroing of either (2 x 256
  // KiB per layer at 64 tokens, top-2, D = 512). The copies run on the compute threads.
  UninitializedVector<float> gathered(static_cast<size_t>(first[E] * D)), results(gathered.size());
  std::vector<int64_t> source(static_cast<size_t>(first[E]));  // gathered row -> token
  for (int64_t e = 0; e < E; ++e) {
    std::copy(rows_of[e].begin(), rows_of[e].end(), source.begin() + first[e]);
  }
  constexpr int64_t kRowsPerCopyItem = 16;
  ops::parallel_for(
      (first[E] + kRowsPerCopyItem - 1) / kRowsPerCopyItem, ops::compute_threads(), [&](int64_t c) {
        const int64_t end = std::min(first[E], (c + 1) * kRowsPerCopyItem);
        for (int64_t g = c * kRowsPerCopyItem; g < end; ++g) {
          std::copy_n(x + source[static_cast<size_t>(g)] * D, D, gathered.begin() + g * D);
        }
      });
  for (int64_t e = 0; e < E; ++e) {
    const auto& rows = rows_of[e];
    if (!rows.empty()) {
      runs.push_back({&moe.experts[e], gathered.data() + first[e] * D,
                      static_cast<int64_t>(rows.size()), results.data() + first[e] * D});
    }
  }
  // Parts 1.. of the down projections' outputs (part 0 writes `out` and `results`); every value
  // is written by the products.
  std::vector<UninitializedVector<float>> shared_store, routed_store;
  const std::vector<float*> shared_parts = ops::part_buffers(out, parts, tokens * D, shared_store);
  const std::vector<float*> routed_parts =
      ops::part_buffers(results.data(), parts, static_cast<int64_t>(results.size()), routed_store);
  run_experts(config, runs, D, PartOutputs{shared_parts, routed_parts, results.data()});

  // Per token, its (result row, weight) pairs in expert order.
  std::vector<int64_t> count(static_cast<size_t>(tokens), 0), src(static_cast<size_t>(tokens * K));
  std::vector<float> weight(src.size());
  for (int64_t e = 0; e < E; ++e) {
    for (size_t r = 0; r < rows_of[e].size(); ++r) {
      const int64_t t = rows_of[e][r];
      src[t * K + count[t]] = first[e] + static_cast<int64_t>(r);
      weight[t * K + count[t]++] = weight_of[e][r];
    }
  }
  // Each part: its shared output plus its routed results, token by token in expert order.
  constexpr int64_t kTokensPerItem = 8;
  const int64_t items = (tokens + kTokensPerItem - 1) / kTokensPerItem;
  ops::parallel_for(items * parts, ops::compute_threads(), [&](int64_t c) {
    const auto q = static_cast<size_t>(c / items);
    const int64_t t0 = c % items * kTokensPerItem;
    for (int64_t t = t0; t < std::min(tokens, t0 + kTokensPerItem); ++t) {
      float* dst = shared_parts[q] + t * D;
      for (int64_t k = 0; k < count[t]; ++k) {
        add_scaled(dst, routed_parts[q] + src[t * K + k] * D, weight[t * K + k], D);
      }
    }
  });
  if (parts > 1) {
    ops::tree_sum(shared_parts, tokens * D, out);
  }
}

}  // namespace tessera::dsv4
