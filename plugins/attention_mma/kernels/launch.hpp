// Host entry points of the mma kernels: each launches on `stream` and returns the launch status.
// Grids come from the work plan (work_plan.hpp); nothing here allocates or synchronizes.
#pragma once

#include <cstddef>

#include "../device_tasks.hpp"

#ifdef TESSERA_DEVICE_EMULATION
#include "cuda_runtime_emulation.hpp"
#else
#include <cuda_runtime.h>
#endif

namespace tessera::mma {

// One block per AttentionItem, heads_per_block * 4 threads; head_dim in {64, 128, 256, 512}.
cudaError_t launch_sparse_attention(const AttentionParams& p, int n_items, int head_dim,
                                    int heads_per_block, size_t smem_bytes, cudaStream_t stream);
// One block per (CombineItem, head of the group).
cudaError_t launch_attention_combine(const CombineParams& p, int n_items, cudaStream_t stream);
// One block per IndexerItem; index_head_dim in {32, 64, 128}.
cudaError_t launch_lightning_indexer(const IndexerParams& p, int n_items, int index_head_dim,
                                     size_t smem_bytes, cudaStream_t stream);
// One block per token task.
cudaError_t launch_topk_select(const TopkParams& p, int n_tasks, size_t smem_bytes,
                               cudaStream_t stream);
// cudaSuccess when this build has machine code the current device can run.
cudaError_t kernel_image_status();

}  // namespace tessera::mma
