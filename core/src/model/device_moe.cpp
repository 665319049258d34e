// The MoE of the device forward (model/moe.hpp has the host one and the algorithm): router and
// routing on the device; the picked experts come to the host, which groups the routed rows by
// expert (token order within an expert) and sends the grouping back; rows gathered, one product
// chain per expert with tokens, the shared expert over every token, and the combine in expert
// order, on the device.
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

template <class T>
T* upload(const DeviceForwardContext& ctx, const std::string& name, const std::vector<T>& host) {
  T* d = ctx.scratch.get<T>(name, static_cast<int64_t>(host.size()));
  ctx.device.copy(d, host.data(), host.size() * sizeof(T), device::CopyKind::kHostToDevice,
                  ctx.stream);
  return d;
}

}  // namespace

void device_moe_forward(const DeviceForwardContext& ctx, int64_t layer, const DeviceMoeWeights& w,
                        const float* x, float* out) {
  const ModelConfig& cfg = ctx.config;
  const device::Stream& s = ctx.stream;
  const auto T = static_cast<int64_t>(ctx.positions.size());
  const int64_t D = cfg.hidden_size, E = cfg.n_routed_experts, K = cfg.experts_per_token;
  const int64_t I = cfg.moe_intermediate_size;

  float* scores = ctx.scratch.get<float>("moe.scores", T * E);
  int32_t* picked = ctx.scratch.get<int32_t>("moe.picked", T * K);
  float* weights = ctx.scratch.get<float>("moe.weights", T * K);
  auto* bad = ctx.scratch.get<int64_t>("moe.bad", 1);
  linear(ctx.ops, s, x, T, w.gate, scores);
  ops::MoeRouting routing{E, K, w.bias};
  const bool hashed = w.tid2eid != nullptr;
  if (hashed) {
    routing.tid2eid = w.tid2eid;
    routing.table_size = w.table_size;
    routing.token_ids = ctx.ids_dev;
  }
  routing.scaling = cfg.routed_scaling_factor;
  ctx.ops.route_tokens(s, routing, scores, T, picked, weights, bad);

  std::vector<int32_t> picked_host(static_cast<size_t>(T * K));
  std::vector<float> weight_host(picked_host.size());
  int64_t bad_host = T;
  ctx.device.copy(picked_host.data(), picked, picked_host.size() * sizeof(int32_t),
                  device::CopyKind::kDeviceToHost, s);
  ctx.device.copy(weight_host.data(), weights, weight_host.size() * sizeof(float),
                  device::CopyKind::kDeviceToHost, s);
  ctx.device.copy(&bad_host, bad, sizeof bad_host, device::CopyKind::kDeviceToHost, s);
  ctx.device.synchronize(s);
  if (bad_host < T) {
    int64_t id = 0;  // the bad token's id, from the batch
    for (int64_t row = 0; const SequenceChunk& c : ctx.batch.chunks)
      for (const int32_t token : c.tokens)
        if (row++ == bad_host) id = token;
    TS_CHECK(!hashed || (id >= 0 && id * K < w.table_size),
             "layer {}: hash routing: token id {} outside tid2eid", layer, id);
    const int32_t* chosen = picked_host.data() + bad_host * K;
    const int32_t e = *std::find_if(chosen, chosen + K, [&](int32_t v) { return v < 0 || v >= E; });
    TS_CHECK(false, "layer {}: routing picked expert {} of {}", layer, e, E);
  }

  // Routed rows grouped by expert, tokens in order within each; per token its (row, weight)
  // pairs in expert order (the order the combine adds them in, as the host MoE).
  std::vector<int64_t> first(static_cast<size_t>(E) + 1, 0);
  for (const int32_t e : picked_host) ++first[static_cast<size_t>(e) + 1];
  for (int64_t e = 0; e < E; ++e) first[e + 1] += first[e];
  const int64_t rows = first[E];
  std::vector<int64_t> source(static_cast<size_t>(rows)), next(first.begin(), first.end() - 1);
  std::vector<int64_t> src(static_cast<size_t>(T * K)), count(static_cast<size_t>(T), 0);
  std::vector<float> weight(src.size());
  for (int64_t e = 0; e < E; ++e) {
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t k = 0; k < K; ++k) {
        if (picked_host[t * K + k] != e) continue;
        const int64_t r = next[e]++;
        source[r] = t;
        src[t * K + count[t]] = r;
        weight[t * K + count[t]++] = weight_host[t * K + k];
      }
    }
  }
  const int64_t* source_dev = upload(ctx, "moe.source", source);
  const int64_t* src_dev = upload(ctx, "moe.src", src);
  const float* weight_dev = upload(ctx, "moe.combine_weight", weight);
  ctx.mark("MoE: router + grouping (host)");

  float* gathered = ctx.scratch.get<float>("moe.gathered", rows * D);
  float* results = ctx.scratch.get<float>("moe.results", rows * D);
  const int64_t most = std::max(T, rows);
  float* g = ctx.scratch.get<float>("moe.g", most * I);
  float* u = ctx.scratch.get<float>("moe.u", most * I);
  ctx.ops.gather_rows(s, x, source_dev, rows, D, gathered);
  run_expert(ctx, w.shared, x, T, g, u, out);
  for (int64_t e = 0; e < E; ++e) {
    const int64_t n = first[e + 1] - first[e];
    if (n > 0) {
      run_expert(ctx, w.experts[static_cast<size_t>(e)], gathered + first[e] * D, n, g, u,
                 results + first[e] * D);
    }
  }
  ctx.ops.moe_combine(s, results, src_dev, weight_dev, T, K, D, out);
  ctx.mark("MoE: experts + combine");
}

}  // namespace tessera::dsv4
