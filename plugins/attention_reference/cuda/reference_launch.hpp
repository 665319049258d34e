// Launchers of the reference attention's kernels (indexer_topk.cu, sink_attention.cu): each
// enqueues on `stream` and returns the launch status. One simple kernel per step.
#pragma once

#include "reference_cuda_api.h"

#ifdef TESSERA_DEVICE_EMULATION
#include "cuda_runtime_emulation.hpp"
#else
#include <cuda_runtime.h>
#endif

namespace tessera::refcuda {

// Indexer scores of every (query, visible entry): a thread each.
cudaError_t launch_indexer_scores(const ts_reference_cuda_layer& layer,
                                  const ts_reference_cuda_sequence& seq, cudaStream_t stream);
// Top-k of each query's scores, best first, ties to the lower entry: a block per query.
cudaError_t launch_select_top_k(const ts_reference_cuda_layer& layer,
                                const ts_reference_cuda_sequence& seq, cudaStream_t stream);
// Sparse attention with the sink: a block per (head, query).
cudaError_t launch_sink_attention(const ts_reference_cuda_layer& layer,
                                  const ts_reference_cuda_sequence& seq, cudaStream_t stream);
// Dynamic shared memory the attention kernel needs for `rows` rows, and its limit on the device.
size_t sink_attention_shared_bytes(int64_t rows);
cudaError_t sink_attention_shared_limit(int32_t ordinal, size_t* bytes);

}  // namespace tessera::refcuda
