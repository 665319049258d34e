// Top-k of one token's indexer scores, best first, ties to the lower entry (the order of
// reference::indexer_select): k = min(index_topk, visible).
// 1. Radix select on the order-preserving 32-bit keys, 8 bits per pass from the top: the exact
//    key T of the k-th best and how many entries equal to T are taken (the lowest indices).
// 2. Compaction: every entry above T, then the first entries equal to T in index order (a block
//    scan keeps the index order).
// 3. Bitonic sort of the k (key, entry) pairs, descending, in shared memory.
// The scores are read 5 times; they were just written and mostly come from L2.
#include "device_primitives.cuh"
#include "launch.hpp"

namespace tessera::mma {
namespace {

using namespace dev;

constexpr int kThreads = kTopkThreads;
constexpr int kWarps = kThreads / 32;

// Sort key: score first, then the lower entry.
TS_DEVICE uint64_t pair_key(uint32_t score_key, int entry) {
  return static_cast<uint64_t>(score_key) << 32 | (0xFFFFFFFFu - static_cast<uint32_t>(entry));
}

TS_KERNEL(kThreads) topk_select_kernel(const TopkParams p) {
  const int tid = thread_index(), lane = tid & 31, warp = tid >> 5;
  const int task_index = block_index();
  if (task_index >= *p.n_tasks) return;  // a shaped grid's spare block
  const TokenTask task = p.tasks[task_index];
  const int n = task.n_visible;
  const int k = n < p.topk ? n : p.topk;
  const float* scores = p.scores + task.score_base;

  uint32_t* hist = reinterpret_cast<uint32_t*>(dynamic_smem());  // [256]
  uint32_t* warp_count = hist + 256;                             // [kWarps]
  uint32_t* scalars = warp_count + kWarps;                       // prefix, take_equal, n_above
  uint64_t* keys = reinterpret_cast<uint64_t*>(scalars + 4);     // [pow2 >= k]

  if (k < n) {
    uint32_t prefix = 0, mask = 0, remaining = static_cast<uint32_t>(k);
    for (int shift = 24; shift >= 0; shift -= 8) {
      for (int i = tid; i < 256; i += kThreads) hist[i] = 0;
      sync_block();
      for (int i = tid; i < n; i += kThreads) {
        const uint32_t key = float_key(scores[i]);
        if ((key & mask) == prefix) atomic_add_shared(&hist[(key >> shift) & 255u], 1u);
      }
      sync_block();
      if (tid == 0) {  // the digit of the k-th best among the keys that match the prefix
        uint32_t above = 0;
        for (int digit = 255; digit >= 0; --digit) {
          if (above + hist[digit] >= remaining) {
            scalars[0] = prefix | static_cast<uint32_t>(digit) << shift;
            scalars[1] = remaining - above;
            break;
          }
          above += hist[digit];
        }
      }
      sync_block();
      prefix = scalars[0];
      remaining = scalars[1];
      mask |= 255u << shift;
    }
    const uint32_t threshold = prefix;  // the k-th best key; take `remaining` entries equal to it
    const uint32_t n_above = static_cast<uint32_t>(k) - remaining;
    if (tid == 0) scalars[2] = 0;
    sync_block();
    uint32_t equal_seen = 0;
    for (int base = 0; base < n; base += kThreads) {
      const int i = base + tid;
      const uint32_t key = i < n ? float_key(scores[i]) : 0u;
      if (i < n && key > threshold) keys[atomic_add_shared(&scalars[2], 1u)] = pair_key(key, i);
      const bool equal = i < n && key == threshold;
      const uint32_t votes = ballot(equal);
      if (lane == 0) warp_count[warp] = static_cast<uint32_t>(popc(votes));
      sync_block();
      uint32_t before = 0, total = 0;
      for (int w = 0; w < kWarps; ++w) {
        before += w < warp ? warp_count[w] : 0u;
        total += warp_count[w];
      }
      const uint32_t rank =
          equal_seen + before + static_cast<uint32_t>(popc(votes & ((1u << lane) - 1u)));
      if (equal && rank < remaining) keys[n_above + rank] = pair_key(key, i);
      equal_seen += total;
      sync_block();  // warp_count is rewritten next round
    }
  } else {
    for (int i = tid; i < n; i += kThreads) keys[i] = pair_key(float_key(scores[i]), i);
  }

  int size = 1;
  while (size < k) size *= 2;
  for (int i = k + tid; i < size; i += kThreads) keys[i] = 0;  // below every real key
  sync_block();
  for (int span = 2; span <= size; span *= 2)
    for (int stride = span / 2; stride > 0; stride /= 2) {
      for (int i = tid; i < size / 2; i += kThreads) {
        const int lo = 2 * stride * (i / stride) + i % stride, hi = lo + stride;
        const bool descending = (lo & span) == 0;
        const uint64_t a = keys[lo], b = keys[hi];
        if ((a < b) == descending) {
          keys[lo] = b;
          keys[hi] = a;
        }
      }
      sync_block();
    }

  for (int j = tid; j < p.topk; j += kThreads) {
    const int entry = j < k ? static_cast<int>(0xFFFFFFFFu - static_cast<uint32_t>(keys[j])) : -1;
    p.selected[static_cast<int64_t>(task_index) * p.topk + j] = entry;
    if (p.out_selected != nullptr)
      p.out_selected[static_cast<int64_t>(task.token) * p.topk + j] = entry;
  }
}

}  // namespace

cudaError_t launch_topk_select(const TopkParams& p, int n_tasks, size_t smem_bytes,
                               cudaStream_t stream) {
  if (n_tasks == 0) return cudaSuccess;
  const cudaError_t e =
      cudaFuncSetAttribute(topk_select_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(smem_bytes));
  if (e != cudaSuccess) return e;
  TS_LAUNCH(topk_select_kernel, dim3(static_cast<unsigned>(n_tasks)), dim3(kThreads), smem_bytes,
            stream, p);
  return cudaGetLastError();
}

}  // namespace tessera::mma
