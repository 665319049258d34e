// Sparse attention with the sink on the device: attend_with_sink of sparse_attention.cpp bit for
// bit, per (head, query): s_j = dot16(q_h, row_j) * scale; m = max(sink_h, max_j s_j);
// e_j = exp(s_j - m); denom = fold16 of 16 lane sums of e_j (lane k: j = k mod 16, ascending) +
// exp(sink_h - m); out_c = (fma chain e_j * row_j[c] over j ascending) * (1 / denom).
// Rows, in the CPU's order: the window (positions max(0, p - window + 1) .. p), then the chosen
// compressed entries best first (CSA) or every visible one (HCA).
#include "reference_launch.hpp"
#include "reference_math.cuh"

namespace tessera::refcuda {
namespace {

using namespace dev;

constexpr int kThreads = 128;

struct QueryRows {
  const float* rows;     // [n_window + n_compressed, head_dim] of the sequence
  const int32_t* picks;  // CSA: the query's chosen entries; null otherwise
  int64_t first_window;  // row of the query's first window position
  int64_t n_window, n_compressed_rows, window_rows_total;
  int32_t dim;

  TS_DEVICE int64_t count() const { return n_window + n_compressed_rows; }
  TS_DEVICE const float* row(int64_t j) const {
    if (j < n_window) return rows + (first_window + j) * dim;
    const int64_t entry = picks != nullptr ? picks[j - n_window] : j - n_window;
    return rows + (window_rows_total + entry) * dim;
  }
};

// out [n_queries, n_heads, head_dim]; grid (n_heads, n_queries); shared memory: the query's row
// weights [max_rows], 16 lane sums, m and 1 / denom.
TS_KERNEL(kThreads)
sink_attention(ts_reference_cuda_layer L, ts_reference_cuda_sequence S) {
  const int32_t h = block_index(), i = block_index_y(), tid = thread_index(), D = L.head_dim;
  const int64_t p = S.first_position + i;
  const int64_t lowest = p - L.window + 1 > 0 ? p - L.window + 1 : 0;
  int64_t visible = 0;
  if (L.compress_ratio > 0) {
    visible = (p + 1) / L.compress_ratio;
    if (visible > S.n_compressed) visible = S.n_compressed;
  }
  const bool csa = L.compress_ratio == 4;
  QueryRows q_rows{S.rows,
                   csa ? S.picks + static_cast<int64_t>(i) * L.index_topk : nullptr,
                   lowest - S.window_first_position,
                   p - lowest + 1,
                   csa && visible > L.index_topk ? L.index_topk : visible,
                   S.n_window,
                   D};
  const int64_t n = q_rows.count();
  const float* q = S.q + (static_cast<int64_t>(i) * L.n_heads + h) * D;
  auto* e = reinterpret_cast<float*>(dynamic_smem());  // [max_rows]
  float* lanes = e + S.max_rows;                       // [16]
  float* scalars = lanes + 16;                         // m, 1 / denom
  const float sink = S.sink[h];

  for (int64_t j = tid; j < n; j += kThreads) e[j] = dot16(q, q_rows.row(j), D) * L.softmax_scale;
  sync_block();
  if (tid == 0) {
    float m = sink;
    for (int64_t j = 0; j < n; ++j) m = e[j] > m ? e[j] : m;  // exact: any order gives it
    scalars[0] = m;
  }
  sync_block();
  const float m = scalars[0];
  for (int64_t j = tid; j < n; j += kThreads) e[j] = exp_nonpositive(e[j] - m);
  sync_block();
  if (tid < 16) {
    float lane = 0.0f;
    for (int64_t j = tid; j < n; j += 16) lane += e[j];
    lanes[tid] = lane;
  }
  sync_block();
  if (tid == 0) scalars[1] = 1.0f / (fold16(lanes) + exp_nonpositive(sink - m));
  sync_block();
  const float inverse = scalars[1];
  float* out = S.out + (static_cast<int64_t>(i) * L.n_heads + h) * D;
  for (int32_t c = tid; c < D; c += kThreads) {
    float acc = 0.0f;
    for (int64_t j = 0; j < n; ++j) acc = fma32(e[j], q_rows.row(j)[c], acc);
    out[c] = acc * inverse;
  }
}

}  // namespace

size_t sink_attention_shared_bytes(int64_t rows) {
  return static_cast<size_t>(rows + 16 + 2) * sizeof(float);
}

cudaError_t sink_attention_shared_limit(int32_t ordinal, size_t* bytes) {
  int value = 0;
  const cudaError_t e =
      cudaDeviceGetAttribute(&value, cudaDevAttrMaxSharedMemoryPerBlockOptin, ordinal);
  *bytes = static_cast<size_t>(value);
  return e;
}

cudaError_t launch_sink_attention(const ts_reference_cuda_layer& layer,
                                  const ts_reference_cuda_sequence& seq, cudaStream_t stream) {
  if (seq.n_queries <= 0) return cudaSuccess;
  const size_t smem = sink_attention_shared_bytes(seq.max_rows);
  if (const cudaError_t e = cudaFuncSetAttribute(
          sink_attention, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
      e != cudaSuccess)
    return e;
  TS_LAUNCH(sink_attention,
            dim3(static_cast<unsigned>(layer.n_heads), static_cast<unsigned>(seq.n_queries)),
            dim3(kThreads), smem, stream, layer, seq);
  return cudaGetLastError();
}

}  // namespace tessera::refcuda
