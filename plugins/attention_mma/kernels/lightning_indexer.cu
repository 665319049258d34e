// Lightning indexer scores (DSV4.md §2.5) on tensor cores:
//   score(k) = sum_h w_h * ReLU(qI_h . KI_k)   for the visible entries k of one token only
// Block = one IndexerItem (a range of one token's visible entries, 64 keys per tile, two cp.async
// stages); warp w multiplies indexer heads [16 w, 16 w + 16) (q fragments stay in registers) with
// the key tile, weights and ReLUs its 16 rows and sums them; the 4 warps' sums meet in shared
// memory. Heads past index_n_heads have zero q and weight. Keys are bf16 records or fp8 codes
// (their fp32 scale multiplies the key's score: fp8_gather.cuh).
#include "device_primitives.cuh"
#include "fp8_gather.cuh"
#include "launch.hpp"

namespace tessera::mma {
namespace {

using namespace dev;

constexpr int kKeys = kIndexerTileKeys;
constexpr int kWarps = kIndexerThreads / 32;

template <int kDim>
TS_KERNEL(kIndexerThreads)
lightning_indexer_kernel(const IndexerParams p) {
  constexpr int kChunks = kDim / 8;
  constexpr int kKSteps = kDim / 16;
  const int tid = thread_index(), lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t4 = lane & 3;
  if (block_index() >= *p.n_items) return;  // a shaped grid's spare block
  const IndexerItem item = p.items[block_index()];
  const TokenTask task = p.tasks[item.task];
  const int n_keys = item.key_end - item.key_begin;
  const int n_tiles = (n_keys + kKeys - 1) / kKeys;

  unsigned char* q_s = dynamic_smem();                                      // [64 heads, kDim] bf16
  unsigned char* k_s = q_s + kMaxIndexHeads * kDim * 2;                     // [2, kKeys, kDim] bf16
  float* warp_sums = reinterpret_cast<float*>(k_s + 2 * kKeys * kDim * 2);  // [kWarps, kKeys]

  for (int i = tid; i < kMaxIndexHeads * kChunks; i += kIndexerThreads) {
    const int h = i / kChunks, c = i % kChunks;
    uint4 v{0u, 0u, 0u, 0u};
    if (h < p.n_index_heads) {
      const float4* src = reinterpret_cast<const float4*>(
          p.index_q + (static_cast<int64_t>(task.token) * p.n_index_heads + h) * kDim + c * 8);
      const float4 a = src[0], b = src[1];
      v = uint4{pack_bf16x2(a.x, a.y), pack_bf16x2(a.z, a.w), pack_bf16x2(b.x, b.y),
                pack_bf16x2(b.z, b.w)};
    }
    *reinterpret_cast<uint4*>(q_s + swizzled_chunk(h, c, kChunks)) = v;
  }
  float w[2];  // weights of heads 16 warp + g and + 8
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int h = warp * 16 + g + 8 * i;
    w[i] = h < p.n_index_heads ? p.index_w[static_cast<int64_t>(task.token) * p.n_index_heads + h]
                               : 0.0f;
  }

  constexpr int kThreadsPerKey = kIndexerThreads / kKeys;
  const int load_key = tid / kThreadsPerKey, load_sub = tid % kThreadsPerKey;
  auto load_tile = [&](int tile, int stage) {
    unsigned char* dst = k_s + stage * kKeys * kDim * 2;
    const int key = item.key_begin + tile * kKeys + load_key;
    if (key < item.key_end) {
      const unsigned char* src = p.index_pool + p.index_offsets[task.comp_base + key];
      for (int c = load_sub; c < kChunks; c += kThreadsPerKey) {
        if (p.key_format.fp8 != 0)
          dequantize_chunk(dst + swizzled_chunk(load_key, c, kChunks), src + c * 8, 1.0f);
        else
          cp_async_16(dst + swizzled_chunk(load_key, c, kChunks), src + c * 16);
      }
    } else {
      for (int c = load_sub; c < kChunks; c += kThreadsPerKey)
        *reinterpret_cast<uint4*>(dst + swizzled_chunk(load_key, c, kChunks)) =
            uint4{0u, 0u, 0u, 0u};
    }
  };

  uint32_t qa[kKSteps][4];  // this warp's 16 heads as mma A fragments, loaded once
  load_tile(0, 0);
  cp_async_commit();
  for (int tile = 0; tile < n_tiles; ++tile) {
    if (tile + 1 < n_tiles) load_tile(tile + 1, (tile + 1) & 1);
    cp_async_commit();
    cp_async_wait<1>();
    sync_block();
    if (tile == 0) {
#pragma unroll
      for (int ks = 0; ks < kKSteps; ++ks)
        ldmatrix_x4(qa[ks],
                    q_s + swizzled_chunk(warp * 16 + (lane & 15), 2 * ks + (lane >> 4), kChunks));
    }
    const unsigned char* keys = k_s + (tile & 1) * kKeys * kDim * 2;

    float acc[kKeys / 8][4];  // [key n8 tile][fragment]: heads g, g+8 x keys 2t4, 2t4+1
#pragma unroll
    for (int j = 0; j < kKeys / 8; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
#pragma unroll
    for (int ks = 0; ks < kKSteps; ++ks)
#pragma unroll
      for (int j = 0; j < kKeys / 8; j += 2) {
        uint32_t b[4];
        ldmatrix_x4(b, keys + swizzled_chunk(j * 8 + (lane & 7) + ((lane >> 4) << 3),
                                             2 * ks + ((lane >> 3) & 1), kChunks));
        mma_bf16_16816(acc[j], qa[ks], b[0], b[1]);
        mma_bf16_16816(acc[j + 1], qa[ks], b[2], b[3]);
      }

#pragma unroll
    for (int j = 0; j < kKeys / 8; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float v = w[0] * fmaxf(acc[j][e], 0.0f) + w[1] * fmaxf(acc[j][2 + e], 0.0f);
        v += shfl_xor(v, 4);  // sum over the 8 row groups of the warp
        v += shfl_xor(v, 8);
        v += shfl_xor(v, 16);
        if (g == 0) warp_sums[warp * kKeys + j * 8 + 2 * t4 + e] = v;
      }
    sync_block();
    if (tid < kKeys) {
      const int key = item.key_begin + tile * kKeys + tid;
      if (key < item.key_end) {
        float score = 0.0f;
#pragma unroll
        for (int i = 0; i < kWarps; ++i) score += warp_sums[i * kKeys + tid];
        if (p.key_format.fp8 != 0)
          score *= *reinterpret_cast<const float*>(
              record_scales(p.index_pool, p.index_offsets[task.comp_base + key], p.key_format));
        p.scores[task.score_base + key] = score;
      }
    }
  }
}

template <int kDim>
cudaError_t launch_indexer_dim(const IndexerParams& p, int n_items, size_t smem,
                               cudaStream_t stream) {
  const cudaError_t e =
      cudaFuncSetAttribute(lightning_indexer_kernel<kDim>,
                           cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  if (e != cudaSuccess) return e;
  TS_LAUNCH(lightning_indexer_kernel<kDim>, dim3(static_cast<unsigned>(n_items)),
            dim3(kIndexerThreads), smem, stream, p);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_lightning_indexer(const IndexerParams& p, int n_items, int index_head_dim,
                                     size_t smem_bytes, cudaStream_t stream) {
  if (n_items == 0) return cudaSuccess;
  switch (index_head_dim) {
    case 32:
      return launch_indexer_dim<32>(p, n_items, smem_bytes, stream);
    case 64:
      return launch_indexer_dim<64>(p, n_items, smem_bytes, stream);
    case 128:
      return launch_indexer_dim<128>(p, n_items, smem_bytes, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace tessera::mma
