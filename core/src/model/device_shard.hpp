// A tensor-parallel rank's part of a stored tensor, cut as the device weights are uploaded (the
// placement of docs/engine.md "Tensor parallelism", as executor/weight_sharding.hpp cuts host
// weights): by rows, query heads (wq_b, attn_sink), whole output groups (wo_a), the experts' and
// the shared expert's intermediate rows (w1, w3) and the vocabulary head; by columns, wo_b and
// the experts' w2; everything else whole. Cuts stay in the stored format: BF16 / F32 / FP8
// element ranges, FP4 byte ranges (two values a byte), and the matching rows or columns of the
// UE8M0 block scales, so a share must hold whole scale blocks (128 for FP8, 32 for FP4).
// With expert parallelism (`moe_split = "ep"`) the routed experts are not cut: rank r holds
// experts [r E / N, (r + 1) E / N) whole and none of the others; the shared expert stays split
// by tensor parallelism. Tokens are replicated on every rank, so each rank routes every token,
// computes its experts' rows and the all-reduce after the MoE adds the ranks' parts, as with TP.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/dsv4_tensor_names.hpp"

namespace tessera::dsv4 {

struct RankShare {
  int rank = 0;
  int ranks = 1;
  bool expert_parallel = false;  // routed experts whole, a range per rank
};

enum class SplitAxis { kWhole, kRows, kColumns };

// How the official tensor `name` (a weight or its scale's weight) is split between ranks by
// tensor parallelism.
[[nodiscard]] SplitAxis split_axis(std::string_view name);
// The same for `share`: under expert parallelism the routed experts' tensors are whole.
[[nodiscard]] SplitAxis split_axis(std::string_view name, RankShare share);

// The routed expert a tensor belongs to (`layers.L.ffn.experts.E.*`), or -1.
[[nodiscard]] int64_t routed_expert_of(std::string_view name);

// The routed experts a rank holds: all of them under tensor parallelism (each cut), a range of
// E / N under expert parallelism. Throws tessera::Error when the ranks do not divide E.
struct ExpertRange {
  int64_t first = 0, count = 0;
  [[nodiscard]] bool holds(int64_t e) const { return e >= first && e < first + count; }
};
[[nodiscard]] ExpertRange local_experts(RankShare share, int64_t experts);

// A stored tensor's share: shape and bytes (a view into the mapped file for rows, a gathered copy
// for columns).
struct TensorShare {
  std::vector<int64_t> shape;
  std::vector<std::byte> gathered;
  std::span<const std::byte> bytes;
};

// The share of `t` (shape [rows, ...] or [rows, cols]) along `axis`; `block` is the number of
// weight rows or columns one scale entry covers along that axis (1: no scales). Throws
// tessera::Error naming the tensor when the ranks do not divide the axis or a share would cut
// a scale block.
[[nodiscard]] TensorShare share_of(const StoredTensor& t, const std::string& name, SplitAxis axis,
                                   RankShare share, int64_t block = 1);

}  // namespace tessera::dsv4
