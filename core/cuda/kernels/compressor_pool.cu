// The compressors on the device (kv/compressor_state.hpp has the algorithm; DeviceOps::
// compress_windows and copy_rows say where rows live): the softmax pooling of a step's closed
// windows, whose rows are the step's projections or, for positions of earlier steps, the
// sequence's ring; and the copy of each sequence's last window rows into its ring.
#include "device_primitives.cuh"
#include "ops_launch.hpp"

namespace tessera::kernels {
namespace {

using namespace dev;

constexpr int kThreads = 128;

// entries [count, d]; kv, gate [T, width]; ring_kv, ring_gate [*, width]; width = 2d when
// m == 4, else d. Block (channel block, window i), a thread per channel j: the window's rows
// (channels d + j when overlapping), then the previous window's (channel j; m == 4 and k > 0),
// in position order, weights exp(gate - max gate) and sums in double, as softmax_pool.
TS_KERNEL(kThreads)
compress_windows_kernel(const int64_t* window, const int64_t* first_position,
                        const int64_t* first_row, const int64_t* ring_row, int64_t m, int64_t d,
                        const float* kv, const float* gate, const float* ring_kv,
                        const float* ring_gate, float* entries) {
  const int64_t i = block_index_y();
  const int64_t j = static_cast<int64_t>(block_index()) * kThreads + thread_index();
  if (j >= d) return;
  const bool overlap = m == 4;
  const int64_t width = overlap ? 2 * d : d, windows = overlap ? 2 : 1;
  const int64_t k = window[i], p0 = first_position[i], r0 = first_row[i], ring = ring_row[i];
  if (k < 0) return;  // a padding window (a graph bucket's): its entry is left as it was
  const int parts = overlap && k > 0 ? 2 : 1;
  // Part 0: window k at channel offset d (overlap) or 0; part 1: window k - 1 at offset 0.
  auto value = [&](const float* step, const float* kept, int part, int64_t t) {
    const int64_t p = (k - part) * m + t;
    const int64_t channel = (part == 0 && overlap ? d : 0) + j;
    return p >= p0 ? step[(r0 + p - p0) * width + channel]
                   : kept[(ring + (p / m % windows) * m + p % m) * width + channel];
  };
  float max_gate = kNegInf;
  for (int part = 0; part < parts; ++part)
    for (int64_t t = 0; t < m; ++t) {
      const float g = value(gate, ring_gate, part, t);
      max_gate = max_gate < g ? g : max_gate;
    }
  double denom = 0.0, acc = 0.0;
  for (int part = 0; part < parts; ++part)
    for (int64_t t = 0; t < m; ++t) {
      const double w = exp(static_cast<double>(value(gate, ring_gate, part, t)) - max_gate);
      denom += w;
      acc += w * value(kv, ring_kv, part, t);
    }
  entries[i * d + j] = static_cast<float>(acc / denom);
}

// dst[dst_rows[r]] = src[src_rows[r]] (a negative dst_rows[r]: a padding row, skipped); block
// (column block, row r).
TS_KERNEL(kThreads)
copy_rows_kernel(const float* src, const int64_t* src_rows, int64_t width, float* dst,
                 const int64_t* dst_rows) {
  const int64_t r = block_index_y();
  const int64_t c = static_cast<int64_t>(block_index()) * kThreads + thread_index();
  if (c < width && dst_rows[r] >= 0) dst[dst_rows[r] * width + c] = src[src_rows[r] * width + c];
}

dim3 rows_by_columns(int64_t rows, int64_t columns) {
  return dim3(static_cast<unsigned>((columns + kThreads - 1) / kThreads),
              static_cast<unsigned>(rows));
}

}  // namespace

cudaError_t launch_compress_windows(const int64_t* window, const int64_t* first_position,
                                    const int64_t* first_row, const int64_t* ring_row,
                                    int64_t count, int64_t m, int64_t d, const float* kv,
                                    const float* gate, const float* ring_kv, const float* ring_gate,
                                    float* entries, cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  if (m <= 0 || d <= 0) return cudaErrorInvalidValue;
  TS_LAUNCH(compress_windows_kernel, rows_by_columns(count, d), dim3(kThreads), 0, stream, window,
            first_position, first_row, ring_row, m, d, kv, gate, ring_kv, ring_gate, entries);
  return cudaGetLastError();
}

cudaError_t launch_copy_rows(const float* src, const int64_t* src_rows, int64_t rows, int64_t width,
                             float* dst, const int64_t* dst_rows, cudaStream_t stream) {
  if (rows <= 0 || width <= 0) return cudaSuccess;
  TS_LAUNCH(copy_rows_kernel, rows_by_columns(rows, width), dim3(kThreads), 0, stream, src,
            src_rows, width, dst, dst_rows);
  return cudaGetLastError();
}

}  // namespace tessera::kernels
