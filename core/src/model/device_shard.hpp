// A tensor-parallel rank's part of a stored tensor, cut as the device weights are uploaded (the
// placement of docs/engine.md "Tensor parallelism", as executor/weight_sharding.hpp cuts host
// weights): by rows, query heads (wq_b, attn_sink), whole output groups (wo_a), the experts' and
// the shared expert's intermediate rows (w1, w3) and the vocabulary head; by columns, wo_b and
// the experts' w2; everything else whole. Cuts stay in the stored format: BF16 / F32 / FP8
// element ranges, FP4 byte ranges (two values a byte), and the matching rows or columns of the
// UE8M0 block scales, so a share must hold whole scale blocks (128 for FP8, 32 for FP4).
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
};

enum class SplitAxis { kWhole, kRows, kColumns };

// How the official tensor `name` (a weight or its scale's weight) is split between ranks.
[[nodiscard]] SplitAxis split_axis(std::string_view name);

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
