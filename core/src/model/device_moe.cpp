// The MoE of the device forward (model/moe.hpp has the host one and the algorithm), with no host
// round trip: router and routing, the routed rows grouped by expert (ops/moe_grouping.hpp),
// gathered, every expert's product chain over its rows in one grouped launch per projection
// (device::DeviceOps::grouped_linear), the shared expert over every token, and the combine in
// expert order; under expert parallelism only this rank's experts (model/device_shard.hpp). A
// routing failure is noted per layer on the device and reported after the step
// (check_routing).
#include <algorithm>
#include <vector>

#include "model/device_forward_context.hpp"
#include "util/check.hpp"

namespace tessera::dsv4 {
namespace {

// y = w2 . swiglu(w1 x, w3 x) for `rows` rows; g, u: [rows, I] scratch.
void run_expert(const DeviceForwardContext& ctx, const DeviceExpert& e, const float* x,
                int64_t rows, float* g, float* u, float* y) {
  const int64_t I = e.w1.out;
  linear(ctx.ops, ctx.stream, x, rows, e.w1, g);
  linear(ctx.ops, ctx.stream, x, rows, e.w3, u);
  ctx.ops.swiglu(ctx.stream, g, u, rows * I, static_cast<float>(ctx.config.swiglu_limit));
  linear(ctx.ops, ctx.stream, g, rows, e.w2, y);
}

}  // namespace

void device_moe_forward(const DeviceForwardContext& ctx, int64_t layer, const DeviceMoeWeights& w,
                        const float* x, float* out) {
  const ModelConfig& cfg = ctx.config;
  const device::Stream& s = ctx.stream;
  const int64_t T = ctx.rows;
  const int64_t D = cfg.hidden_size, E = cfg.n_routed_experts, K = cfg.experts_per_token;
  // This rank's expert width (the whole one without tensor parallelism), routed and shared.
  const int64_t I = w.experts.empty() ? 0 : w.w1.out, rows = T * K;
  const int64_t shared_rows_I = T * w.shared.w1.out;

  float* scores = ctx.scratch.get<float>("moe.scores", T * E);
  int32_t* picked = ctx.scratch.get<int32_t>("moe.picked", T * K);
  float* weights = ctx.scratch.get<float>("moe.weights", T * K);
  int64_t* bad = ctx.routing_failures + layer;  // read by check_routing after the step
  linear(ctx.ops, s, x, T, w.gate, scores);
  ops::MoeRouting routing{E, K, w.bias};
  if (w.tid2eid != nullptr) {
    routing.tid2eid = w.tid2eid;
    routing.table_size = w.table_size;
    routing.token_ids = ctx.ids_dev;
  }
  routing.scaling = cfg.routed_scaling_factor;
  ctx.ops.route_tokens(s, routing, scores, T, picked, weights, bad);

  // Every token picks K distinct experts: T * K routed rows, grouped by expert on the device.
  auto* offsets = ctx.scratch.get<int64_t>("moe.offsets", E + 1);
  auto* source = ctx.scratch.get<int64_t>("moe.source", rows);
  auto* src = ctx.scratch.get<int64_t>("moe.src", rows);
  auto* combine_weight = ctx.scratch.get<float>("moe.combine_weight", rows);
  ctx.ops.moe_group(s, picked, weights, T, K, E, offsets, source, src, combine_weight);
  ctx.mark("MoE: router + grouping");

  float* gathered = ctx.scratch.get<float>("moe.gathered", rows * D);
  float* results = ctx.scratch.get<float>("moe.results", rows * D);
  float* g = ctx.scratch.get<float>("moe.g", std::max(rows * I, shared_rows_I));
  float* u = ctx.scratch.get<float>("moe.u", std::max(rows * I, shared_rows_I));
  ctx.ops.gather_rows(s, x, source, rows, D, gathered);
  run_expert(ctx, w.shared, x, T, g, u, out);
  // Expert parallelism: this rank computes the rows of its experts only (offsets stay absolute
  // row numbers); the other rows' results are zero here and come from their ranks.
  const auto local = static_cast<int64_t>(w.experts.size());
  if (local < E) {
    ctx.device.fill(results, 0, static_cast<size_t>(rows * D) * sizeof(float), s);
  }
  if (local > 0) {
    const int64_t* first = offsets + w.first_expert;
    grouped_linear(ctx.ops, s, gathered, w.w1, local, first, g);
    grouped_linear(ctx.ops, s, gathered, w.w3, local, first, u);
    ctx.ops.swiglu(s, g, u, rows * I, static_cast<float>(cfg.swiglu_limit));
    grouped_linear(ctx.ops, s, g, w.w2, local, first, results);
  }
  ctx.ops.moe_combine(s, results, src, combine_weight, T, K, D, out);
  ctx.mark("MoE: experts + combine");
}

void check_routing(const ModelConfig& config, std::span<const int64_t> failures,
                   const ForwardBatch& batch) {
  const int64_t T = batch.total_tokens();
  for (int64_t layer = 0; layer < static_cast<int64_t>(failures.size()); ++layer) {
    const int64_t row = failures[static_cast<size_t>(layer)];
    if (row >= T) {
      continue;
    }
    int64_t id = -1;  // the failing token's id, from the batch
    for (int64_t r = 0; const SequenceChunk& c : batch.chunks) {
      for (const int32_t token : c.tokens) {
        if (r++ == row) {
          id = token;
        }
      }
    }
    TS_CHECK(!config.is_hash_layer(layer), "layer {}: hash routing: token id {} outside tid2eid",
             layer, id);
    TS_CHECK(false, "layer {}: routing of token {} (id {}) picked an expert outside [0, {})", layer,
             row, id, config.n_routed_experts);
  }
}

}  // namespace tessera::dsv4
