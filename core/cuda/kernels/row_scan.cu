// What the sampler needs of each row of logits besides the logits (ops::RowScan, ops/row_scan.hpp;
// plugin_abi.h ts_row_scan / ts_row_groups): the largest value, the lowest column
// holding it, whether every value is finite, and the max of each column group (group
// (c / 256) * 16 + c % 16; -inf for a partial block's empty groups). One block per row.
#include "device_primitives.cuh"
#include "ops_launch.hpp"

namespace tessera::kernels {
namespace {

using namespace dev;

constexpr int kThreads = 256;
constexpr int64_t kGroupBlock = 256;  // TS_LOGIT_GROUP_BLOCK
constexpr int64_t kGroupLanes = 16;   // TS_LOGIT_GROUP_LANES

TS_DEVICE bool is_finite(float v) { return (float_bits(v) & 0x7FFFFFFFu) <= 0x7F7FFFFFu; }

// logits: [rows, vocab]; scans: [rows]; group_max: [rows, groups] or null.
TS_KERNEL(kThreads)
row_scan_kernel(const float* logits, int64_t vocab, ops::RowScan* scans, float* group_max,
                int64_t groups) {
  const int64_t r = block_index();
  const float* row = logits + r * vocab;
  const int tid = thread_index();
  const float minus_inf = -__builtin_huge_valf();
  float best = minus_inf;
  int64_t best_column = -1;
  bool finite = true;
  for (int64_t c = tid; c < vocab; c += kThreads) {  // ascending: the first of equals stays
    const float v = row[c];
    finite = finite && is_finite(v);
    if (v > best) {  // a NaN never wins: the row is then not finite, and max means nothing
      best = v;
      best_column = c;
    }
  }
  if (group_max != nullptr) {
    for (int64_t g = tid; g < groups; g += kThreads) {  // group g: block g / 16, lane g % 16
      const int64_t first = g / kGroupLanes * kGroupBlock + g % kGroupLanes;
      float m = minus_inf;
      for (int64_t c = first; c < first + kGroupBlock && c < vocab; c += kGroupLanes)
        m = row[c] > m ? row[c] : m;
      group_max[r * groups + g] = m;
    }
  }
  // Block reduction of (best, column, finite): the larger value, then the lower column.
  auto* values = reinterpret_cast<float*>(dynamic_smem());  // [kThreads]
  auto* columns = reinterpret_cast<int64_t*>(values + kThreads);
  auto* flags = reinterpret_cast<int*>(columns + kThreads);
  values[tid] = best;
  columns[tid] = best_column;
  flags[tid] = finite ? 1 : 0;
  sync_block();
  for (int half = kThreads / 2; half >= 1; half /= 2) {
    if (tid < half) {
      const float v = values[tid + half];
      const int64_t c = columns[tid + half];
      if (c >= 0 &&
          (columns[tid] < 0 || v > values[tid] || (v == values[tid] && c < columns[tid]))) {
        values[tid] = v;
        columns[tid] = c;
      }
      flags[tid] = flags[tid] & flags[tid + half];
    }
    sync_block();
  }
  if (tid == 0) {
    const bool all_finite = flags[0] != 0;
    scans[r].max = values[0];
    scans[r].argmax = all_finite ? static_cast<int32_t>(columns[0]) : -1;
    scans[r].finite = all_finite;
  }
}

}  // namespace

cudaError_t launch_row_scan(const float* logits, int64_t rows, int64_t vocab, ops::RowScan* scans,
                            float* group_max, cudaStream_t stream) {
  if (rows <= 0) return cudaSuccess;
  const int64_t groups = (vocab + kGroupBlock - 1) / kGroupBlock * kGroupLanes;
  TS_LAUNCH(row_scan_kernel, dim3(static_cast<unsigned>(rows)), dim3(kThreads),
            kThreads * (sizeof(float) + sizeof(int64_t) + sizeof(int)), stream, logits, vocab,
            scans, group_max, groups);
  return cudaGetLastError();
}

}  // namespace tessera::kernels
