#include "ops/tree_sum.hpp"

#include <algorithm>
#include <array>
#include <bit>

#include "ops/compute_threads.hpp"
#include "util/check.hpp"

namespace tessera::ops {
namespace {

// Elements per block: the levels' scratch (one block per level) stays in the L1.
constexpr int64_t kBlock = 512;
constexpr int kMostLevels = 16;  // up to 2^16 parts

// out[0..n) = tree over parts [lo, hi) of block [first, first + n); scratch[level] is free for
// this call's right subtree.
void tree_block(std::span<const float* const> parts, size_t lo, size_t hi, int64_t first, int64_t n,
                float* out, std::array<float*, kMostLevels>& scratch, int level) {
  if (hi - lo == 1) {
    const float* src = parts[lo] + first;
    if (src != out) {
      std::copy_n(src, n, out);
    }
    return;
  }
  const size_t mid = lo + std::bit_floor(hi - lo - 1);
  float* right = scratch[static_cast<size_t>(level)];
  tree_block(parts, mid, hi, first, n, right, scratch, level + 1);
  tree_block(parts, lo, mid, first, n, out, scratch, level + 1);
  for (int64_t i = 0; i < n; ++i) {
    out[i] += right[i];
  }
}

}  // namespace

void tree_sum(std::span<const float* const> parts, int64_t count, float* out) {
  TS_CHECK(!parts.empty(), "tree_sum: no parts");
  TS_CHECK(std::bit_width(parts.size()) <= kMostLevels, "tree_sum: {} parts", parts.size());
  if (count <= 0) {
    return;
  }
  // out may be parts[0]: every right subtree is summed into scratch first, and parts[0] is the
  // left-most leaf, whose copy onto out is then skipped; nothing else reads it.
  const int64_t blocks = (count + kBlock - 1) / kBlock;
  parallel_for(blocks, compute_threads(), [&](int64_t b) {
    thread_local std::array<std::array<float, kBlock>, kMostLevels> store;
    std::array<float*, kMostLevels> scratch{};
    for (size_t l = 0; l < scratch.size(); ++l) {
      scratch[l] = store[l].data();
    }
    const int64_t first = b * kBlock, n = std::min(kBlock, count - first);
    tree_block(parts, 0, parts.size(), first, n, out + first, scratch, 0);
  });
}

std::vector<float*> part_buffers(float* first, int parts, int64_t count,
                                 std::vector<UninitializedVector<float>>& store) {
  store.resize(static_cast<size_t>(std::max(parts - 1, 0)));
  std::vector<float*> out{first};
  for (UninitializedVector<float>& buffer : store) {
    buffer.resize(static_cast<size_t>(count));
    out.push_back(buffer.data());
  }
  return out;
}

}  // namespace tessera::ops
