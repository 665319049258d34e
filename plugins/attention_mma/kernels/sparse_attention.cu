// Sparse attention with an attention sink (DSV4.md §2.3 step 6) over bf16 or fp8 latent-cache
// records (the fp8 ones dequantised into the bf16 tile as they are gathered: fp8_gather.cuh),
// on tensor cores (mma.sync m16n8k16, bf16 inputs, fp32 accumulation):
//   s_j = scale * q_h . kv_j,   o_h = sum_j exp(s_j) kv_j / (sum_j exp(s_j) + exp(sink_h))
// K == V: each gathered row is used for the scores and, through ldmatrix.trans, as the value.
//
// Block = one AttentionItem: up to 64 heads (the mma M dimension) of one token over a range of
// its rows, 32 rows per tile, two cp.async stages. Warps come in pairs per 16 heads: warp
// (mt, half) computes the scores of rows [16 half, 16 half + 16) of the tile for heads
// [16 mt, 16 mt + 16) over all head_dim channels, the pair shares the row maxima and the
// probabilities through shared memory, and then each warp accumulates half of the value
// channels. Online softmax in base 2 (FlashAttention-2, Dao 2023).
#include "device_primitives.cuh"
#include "fp8_gather.cuh"
#include "launch.hpp"

namespace tessera::mma {
namespace {

using namespace dev;

constexpr int kRows = kAttentionTileRows;

// Byte offset in the kv pool of row `row` of a token's list [window rows | compressed rows].
TS_DEVICE int64_t row_offset(const AttentionParams& p, const TokenTask& task, int task_index,
                             int row) {
  if (row < task.n_window) return p.window_offsets[task.window_base + row];
  const int j = row - task.n_window;
  const int entry =
      p.selected != nullptr ? p.selected[static_cast<int64_t>(task_index) * p.topk + j] : j;
  return p.comp_offsets[task.comp_base + entry];
}

// Probability tile rows are 32 bf16 = 4 chunks; XOR with (row / 2) % 4 spreads the 8 rows an
// ldmatrix reads over all 32 banks.
TS_DEVICE int prob_chunk(int row, int chunk) { return (row * 4 + (chunk ^ ((row >> 1) & 3))) * 16; }

template <int kDim>
TS_KERNEL(256)
sparse_attention_kernel(const AttentionParams p) {
  constexpr int kChunks = kDim / 8;      // 16-byte chunks per bf16 row
  constexpr int kKSteps = kDim / 16;     // k16 steps of q . kv
  constexpr int kHalfTiles = kDim / 16;  // n8 tiles in one half of the value channels
  const int tid = thread_index(), lane = tid & 31, warp = tid >> 5;
  const int n_threads = block_threads();
  const int heads = n_threads / 4;
  const int mt = warp >> 1, half = warp & 1;
  const int g = lane >> 2, t4 = lane & 3;

  if (block_index() >= *p.n_items) return;  // a shaped grid's spare block
  const AttentionItem item = p.items[block_index()];
  const TokenTask task = p.tasks[item.task];
  const int h0 = item.head_group * heads;
  const int n_rows = item.row_end - item.row_begin;
  const int n_tiles = (n_rows + kRows - 1) / kRows;

  unsigned char* q_s = dynamic_smem();                               // [heads, kDim] bf16
  unsigned char* kv_s = q_s + heads * kDim * 2;                      // [2, kRows, kDim] bf16
  unsigned char* p_s = kv_s + 2 * kRows * kDim * 2;                  // [heads, kRows] bf16
  float* max_x = reinterpret_cast<float*>(p_s + heads * kRows * 2);  // [warps, 16]
  float* sum_x = max_x + (n_threads / 32) * 16;                      // [warps, 16]

  // q rows of this head group, fp32 -> bf16 (heads past n_heads are zero)
  for (int i = tid; i < heads * kChunks; i += n_threads) {
    const int r = i / kChunks, c = i % kChunks, h = h0 + r;
    uint4 v{0u, 0u, 0u, 0u};
    if (h < p.n_heads) {
      const float4* src = reinterpret_cast<const float4*>(
          p.q + (static_cast<int64_t>(task.token) * p.n_heads + h) * kDim + c * 8);
      const float4 a = src[0], b = src[1];
      v = uint4{pack_bf16x2(a.x, a.y), pack_bf16x2(a.z, a.w), pack_bf16x2(b.x, b.y),
                pack_bf16x2(b.z, b.w)};
    }
    *reinterpret_cast<uint4*>(q_s + swizzled_chunk(r, c, kChunks)) = v;
  }

  // Gather: each row of a tile is one record somewhere in the pool: 2*kDim bf16 bytes, or nope
  // e4m3 bytes (8 per chunk, scaled per 64 channels) then the rope's bf16 chunks.
  const int threads_per_row = n_threads / kRows;
  const int load_row = tid / threads_per_row, load_sub = tid % threads_per_row;
  const int fp8_chunks = p.kv_format.fp8 != 0 ? p.kv_format.nope / 8 : 0;
  auto load_tile = [&](int tile, int stage) {
    unsigned char* dst = kv_s + stage * kRows * kDim * 2;
    const int row = item.row_begin + tile * kRows + load_row;
    if (row < item.row_end) {
      const int64_t offset = row_offset(p, task, item.task, row);
      const unsigned char* src = p.kv_pool + offset;
      const unsigned char* scales =
          fp8_chunks > 0 ? record_scales(p.kv_pool, offset, p.kv_format) : nullptr;
      for (int c = load_sub; c < kChunks; c += threads_per_row) {
        unsigned char* chunk = dst + swizzled_chunk(load_row, c, kChunks);
        if (c < fp8_chunks)
          dequantize_chunk(chunk, src + c * 8, formats::ue8m0_to_float(scales[c / 8]));
        else
          cp_async_16(chunk, src + fp8_chunks * 8 + (c - fp8_chunks) * 16);
      }
    } else {  // rows past the end are zero: their probabilities are 0, and 0 * NaN would poison
      for (int c = load_sub; c < kChunks; c += threads_per_row)
        *reinterpret_cast<uint4*>(dst + swizzled_chunk(load_row, c, kChunks)) =
            uint4{0u, 0u, 0u, 0u};
    }
  };

  float o[kHalfTiles][4];  // [value n8 tile][fragment]: heads g, g+8 x channels 2t4, 2t4+1
#pragma unroll
  for (int j = 0; j < kHalfTiles; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
  float m_run[2] = {kNegInf, kNegInf};  // running max of heads g, g+8 (log2 units)
  float l_run[2] = {0.0f, 0.0f};        // this thread's share of the running sums

  load_tile(0, 0);
  cp_async_commit();
  for (int tile = 0; tile < n_tiles; ++tile) {
    if (tile + 1 < n_tiles) load_tile(tile + 1, (tile + 1) & 1);
    cp_async_commit();
    cp_async_wait<1>();
    sync_block();
    const unsigned char* kv = kv_s + (tile & 1) * kRows * kDim * 2;

    // scores [16 heads, 16 rows] = q [16, kDim] . kv^T
    float s[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
#pragma unroll 8
    for (int ks = 0; ks < kKSteps; ++ks) {
      uint32_t a[4], b[4];
      ldmatrix_x4(a, q_s + swizzled_chunk(mt * 16 + (lane & 15), 2 * ks + (lane >> 4), kChunks));
      ldmatrix_x4(b, kv + swizzled_chunk(half * 16 + (lane & 7) + ((lane >> 4) << 3),
                                         2 * ks + ((lane >> 3) & 1), kChunks));
      mma_bf16_16816(s[0], a, b[0], b[1]);
      mma_bf16_16816(s[1], a, b[2], b[3]);
    }

    // online softmax; the pair of warps agrees on the row maxima
    const int row0 = tile * kRows + half * 16;
    float mx[2] = {kNegInf, kNegInf};
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const bool valid = row0 + nt * 8 + 2 * t4 + e < n_rows;
        s[nt][e] = valid ? s[nt][e] * p.scale_log2 : kNegInf;
        s[nt][2 + e] = valid ? s[nt][2 + e] * p.scale_log2 : kNegInf;
        mx[0] = fmaxf(mx[0], s[nt][e]);
        mx[1] = fmaxf(mx[1], s[nt][2 + e]);
      }
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      mx[i] = fmaxf(mx[i], shfl_xor(mx[i], 1));
      mx[i] = fmaxf(mx[i], shfl_xor(mx[i], 2));
    }
    if (t4 == 0) {
      max_x[warp * 16 + g] = mx[0];
      max_x[warp * 16 + g + 8] = mx[1];
    }
    sync_block();
    float m_new[2], alpha[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      m_new[i] = fmaxf(m_run[i], fmaxf(mx[i], max_x[(warp ^ 1) * 16 + g + 8 * i]));
      alpha[i] = fast_exp2(m_run[i] - m_new[i]);  // 0 on the first tile (m_run = -inf)
      m_run[i] = m_new[i];
      l_run[i] *= alpha[i];
    }
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
      const uint32_t top =
          pack_bf16x2(fast_exp2(s[nt][0] - m_new[0]), fast_exp2(s[nt][1] - m_new[0]));
      const uint32_t bottom =
          pack_bf16x2(fast_exp2(s[nt][2] - m_new[1]), fast_exp2(s[nt][3] - m_new[1]));
      l_run[0] += bf16x2_sum(top);  // sum what the value product will use
      l_run[1] += bf16x2_sum(bottom);
      const int chunk = half * 2 + nt;
      *reinterpret_cast<uint32_t*>(p_s + prob_chunk(mt * 16 + g, chunk) + 4 * t4) = top;
      *reinterpret_cast<uint32_t*>(p_s + prob_chunk(mt * 16 + g + 8, chunk) + 4 * t4) = bottom;
    }
#pragma unroll
    for (int j = 0; j < kHalfTiles; ++j) {
      o[j][0] *= alpha[0];
      o[j][1] *= alpha[0];
      o[j][2] *= alpha[1];
      o[j][3] *= alpha[1];
    }
    sync_block();

    // o [16 heads, kDim/2] += probabilities [16, 32 rows] . kv [32 rows, this half's channels]
#pragma unroll
    for (int kk = 0; kk < kRows / 16; ++kk) {
      uint32_t a[4];
      ldmatrix_x4(a, p_s + prob_chunk(mt * 16 + (lane & 15), 2 * kk + (lane >> 4)));
      const int kv_row = kk * 16 + (lane & 7) + (((lane >> 3) & 1) << 3);
#pragma unroll
      for (int j = 0; j < kHalfTiles; j += 2) {
        uint32_t b[4];
        ldmatrix_x4_trans(
            b, kv + swizzled_chunk(kv_row, half * kHalfTiles + j + (lane >> 4), kChunks));
        mma_bf16_16816(o[j], a, b[0], b[1]);
        mma_bf16_16816(o[j + 1], a, b[2], b[3]);
      }
    }
    sync_block();  // the stage and the probabilities are rewritten next
  }

  // row sums: lanes of a row, then the pair
  float l_tot[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    l_run[i] += shfl_xor(l_run[i], 1);
    l_run[i] += shfl_xor(l_run[i], 2);
  }
  if (t4 == 0) {
    sum_x[warp * 16 + g] = l_run[0];
    sum_x[warp * 16 + g + 8] = l_run[1];
  }
  sync_block();
#pragma unroll
  for (int i = 0; i < 2; ++i) l_tot[i] = l_run[i] + sum_x[(warp ^ 1) * 16 + g + 8 * i];

#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int local = mt * 16 + g + 8 * i, h = h0 + local;
    if (h >= p.n_heads) continue;
    const int col = half * (kDim / 2) + 2 * t4;
    if (item.partial < 0) {
      // the sink joins the denominator only; rescale both terms to max(m, sink) against overflow
      const float sink = p.sink[h] * kLog2e;
      const float top = fmaxf(m_run[i], sink);
      const float keep = fast_exp2(m_run[i] - top);
      const float scale = keep / (l_tot[i] * keep + fast_exp2(sink - top));
      float* dst = p.out + (static_cast<int64_t>(task.token) * p.n_heads + h) * kDim + col;
#pragma unroll
      for (int j = 0; j < kHalfTiles; ++j)
        *reinterpret_cast<float2*>(dst + j * 8) =
            float2{o[j][2 * i] * scale, o[j][2 * i + 1] * scale};
    } else {
      const int64_t slot = static_cast<int64_t>(item.partial) * heads + local;
      float* dst = p.partial_o + slot * kDim + col;
#pragma unroll
      for (int j = 0; j < kHalfTiles; ++j)
        *reinterpret_cast<float2*>(dst + j * 8) = float2{o[j][2 * i], o[j][2 * i + 1]};
      if (half == 0 && t4 == 0) {
        p.partial_ml[slot * 2] = m_run[i];
        p.partial_ml[slot * 2 + 1] = l_tot[i];
      }
    }
  }
}

// Merges the partial results of one (token, head) split over several blocks:
//   o = sum_s 2^(m_s - M) o_s / (sum_s 2^(m_s - M) l_s + 2^(sink - M)),  M = max(m_s, sink)
TS_KERNEL(kCombineThreads) attention_combine_kernel(const CombineParams p) {
  if (block_index() >= *p.n_items) return;
  const CombineItem item = p.items[block_index()];
  const int local = block_index_y();
  const int h = item.head_group * p.heads_per_block + local;
  if (h >= p.n_heads) return;
  const TokenTask task = p.tasks[item.task];
  const float sink = p.sink[h] * kLog2e;
  auto ml = [&](int s) {
    return p.partial_ml +
           (static_cast<int64_t>(item.first_partial + s) * p.heads_per_block + local) * 2;
  };
  float top = sink;
  for (int s = 0; s < item.n_partials; ++s) top = fmaxf(top, ml(s)[0]);
  float denom = fast_exp2(sink - top);
  for (int s = 0; s < item.n_partials; ++s) denom += ml(s)[1] * fast_exp2(ml(s)[0] - top);
  const float inv = 1.0f / denom;
  float* out = p.out + (static_cast<int64_t>(task.token) * p.n_heads + h) * p.head_dim;
  for (int d = thread_index(); d < p.head_dim; d += block_threads()) {
    float acc = 0.0f;
    for (int s = 0; s < item.n_partials; ++s) {
      const int64_t slot = static_cast<int64_t>(item.first_partial + s) * p.heads_per_block + local;
      acc += fast_exp2(ml(s)[0] - top) * p.partial_o[slot * p.head_dim + d];
    }
    out[d] = acc * inv;
  }
}

template <int kDim>
cudaError_t launch_attention_dim(const AttentionParams& p, int n_items, int heads_per_block,
                                 size_t smem, cudaStream_t stream) {
  const cudaError_t e =
      cudaFuncSetAttribute(sparse_attention_kernel<kDim>,
                           cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  if (e != cudaSuccess) return e;
  TS_LAUNCH(sparse_attention_kernel<kDim>, dim3(static_cast<unsigned>(n_items)),
            dim3(static_cast<unsigned>(heads_per_block * 4)), smem, stream, p);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_sparse_attention(const AttentionParams& p, int n_items, int head_dim,
                                    int heads_per_block, size_t smem_bytes, cudaStream_t stream) {
  if (n_items == 0) return cudaSuccess;
  switch (head_dim) {
    case 64:
      return launch_attention_dim<64>(p, n_items, heads_per_block, smem_bytes, stream);
    case 128:
      return launch_attention_dim<128>(p, n_items, heads_per_block, smem_bytes, stream);
    case 256:
      return launch_attention_dim<256>(p, n_items, heads_per_block, smem_bytes, stream);
    case 512:
      return launch_attention_dim<512>(p, n_items, heads_per_block, smem_bytes, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t launch_attention_combine(const CombineParams& p, int n_items, cudaStream_t stream) {
  if (n_items == 0) return cudaSuccess;
  TS_LAUNCH(attention_combine_kernel,
            dim3(static_cast<unsigned>(n_items), static_cast<unsigned>(p.heads_per_block)),
            dim3(kCombineThreads), 0, stream, p);
  return cudaGetLastError();
}

cudaError_t kernel_image_status() {
#ifdef TESSERA_DEVICE_EMULATION
  return cudaSuccess;
#else
  cudaFuncAttributes attributes{};
  return cudaFuncGetAttributes(&attributes, sparse_attention_kernel<512>);
#endif
}

}  // namespace tessera::mma
