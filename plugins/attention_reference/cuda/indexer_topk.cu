// The lightning indexer of the reference attention on the device: the scores of
// lightning_indexer.cpp bit for bit (each head's dot16, its ReLU as std::max(dot, 0), the heads
// summed as one fma chain over h ascending), then the top-k with its order: best first, ties to
// the lower entry.
#include "reference_launch.hpp"
#include "reference_math.cuh"

namespace tessera::refcuda {
namespace {

using namespace dev;

constexpr int kScoreThreads = 128;
constexpr int kSelectThreads = 256;

TS_DEVICE int64_t visible_entries(const ts_reference_cuda_layer& L,
                                  const ts_reference_cuda_sequence& S, int32_t query) {
  const int64_t by_position = (S.first_position + query + 1) / L.compress_ratio;
  return by_position < S.n_compressed ? by_position : S.n_compressed;
}

// scores [n_queries, n_compressed]: entry k of query i (k < visible) =
//   sum_h w[i, h] * ReLU(index_q[i, h, :] . keys[k, :]); grid (entries / 128, n_queries).
TS_KERNEL(kScoreThreads)
indexer_scores(ts_reference_cuda_layer L, ts_reference_cuda_sequence S) {
  const int32_t i = block_index_y();
  const int64_t k = static_cast<int64_t>(block_index()) * kScoreThreads + thread_index();
  if (k >= visible_entries(L, S, i)) return;
  const int32_t IH = L.index_n_heads, ID = L.index_head_dim;
  const float* q = S.index_q + static_cast<int64_t>(i) * IH * ID;
  const float* w = S.index_w + static_cast<int64_t>(i) * IH;
  const float* key = S.keys + k * ID;
  float total = 0.0f;
  for (int32_t h = 0; h < IH; ++h) {
    const float dot = dot16(q + static_cast<int64_t>(h) * ID, key, ID);
    total = fma32(w[h], dot < 0.0f ? 0.0f : dot, total);  // std::max(dot, 0.0f)
  }
  S.scores[static_cast<int64_t>(i) * S.n_compressed + k] = total;
}

// Order-preserving key of a score; -0 and +0 compare equal, as the CPU's float comparison has it.
TS_DEVICE uint32_t score_key(float s) { return float_key(s == 0.0f ? 0.0f : s); }

// How many of scores[0..n) have a key >= threshold (every thread gets the count).
TS_DEVICE uint32_t count_at_least(const float* scores, int64_t n, uint32_t threshold,
                                  uint32_t* counter) {
  sync_block();
  if (thread_index() == 0) *counter = 0;
  sync_block();
  uint32_t mine = 0;
  for (int64_t k = thread_index(); k < n; k += kSelectThreads)
    mine += score_key(scores[k]) >= threshold ? 1u : 0u;
  atomic_add_shared(counter, mine);
  sync_block();
  return *counter;
}

// picks [n_queries, index_topk]: the K = min(index_topk, visible) best entries, best first (a
// higher score first, the lower entry first among equal scores); selected (optional) the same,
// -1 padded. Block per query: the K-th largest key by bisection over the key's 32 bits; the
// entries above it and, in entry order, as many equal to it as fit; then each chosen entry's rank
// by counting the chosen entries that come before it.
TS_KERNEL(kSelectThreads)
select_top_k(ts_reference_cuda_layer L, ts_reference_cuda_sequence S) {
  const int32_t i = block_index(), topk = L.index_topk;
  const int64_t visible = visible_entries(L, S, i);
  const int64_t K = visible < topk ? visible : topk;
  const float* scores = S.scores + static_cast<int64_t>(i) * S.n_compressed;
  int32_t* candidates = S.candidates + static_cast<int64_t>(i) * topk;
  int32_t* picks = S.picks + static_cast<int64_t>(i) * topk;
  auto* counter = reinterpret_cast<uint32_t*>(dynamic_smem());
  if (K > 0) {
    uint32_t threshold = 0;
    for (int bit = 31; bit >= 0; --bit) {
      const uint32_t trial = threshold | (1u << bit);
      if (count_at_least(scores, visible, trial, counter) >= K) threshold = trial;
    }
    const uint32_t above =
        threshold == 0xFFFFFFFFu ? 0u : count_at_least(scores, visible, threshold + 1, counter);
    if (thread_index() == 0) {
      int64_t taken = 0, equal_left = K - above;
      for (int64_t k = 0; k < visible; ++k) {
        const uint32_t key = score_key(scores[k]);
        if (key > threshold || (key == threshold && equal_left-- > 0))
          candidates[taken++] = static_cast<int32_t>(k);
      }
    }
    sync_block();
    for (int64_t r = thread_index(); r < K; r += kSelectThreads) {
      const int32_t a = candidates[r];
      const float sa = scores[a];
      int64_t rank = 0;
      for (int64_t j = 0; j < K; ++j) {
        const int32_t b = candidates[j];
        const float sb = scores[b];
        rank += (sb > sa || (sb == sa && b < a)) ? 1 : 0;
      }
      picks[rank] = a;
    }
  }
  sync_block();
  if (S.selected != nullptr) {
    int32_t* selected = S.selected + static_cast<int64_t>(i) * topk;
    for (int32_t j = thread_index(); j < topk; j += kSelectThreads)
      selected[j] = j < K ? picks[j] : -1;
  }
}

}  // namespace

cudaError_t launch_indexer_scores(const ts_reference_cuda_layer& layer,
                                  const ts_reference_cuda_sequence& seq, cudaStream_t stream) {
  if (seq.n_compressed <= 0 || seq.n_queries <= 0) return cudaSuccess;
  const auto blocks = static_cast<unsigned>((seq.n_compressed + kScoreThreads - 1) / kScoreThreads);
  TS_LAUNCH(indexer_scores, dim3(blocks, static_cast<unsigned>(seq.n_queries)), dim3(kScoreThreads),
            0, stream, layer, seq);
  return cudaGetLastError();
}

cudaError_t launch_select_top_k(const ts_reference_cuda_layer& layer,
                                const ts_reference_cuda_sequence& seq, cudaStream_t stream) {
  if (seq.n_queries <= 0) return cudaSuccess;
  TS_LAUNCH(select_top_k, dim3(static_cast<unsigned>(seq.n_queries)), dim3(kSelectThreads),
            sizeof(uint32_t), stream, layer, seq);
  return cudaGetLastError();
}

}  // namespace tessera::refcuda
