// Host side of the mma backend: checks that a layer, a batch and a kv layout are something the
// kernels support, and splits one batch into thread-block work items. Pure C++ (no CUDA), so the
// split is unit-tested on machines without a GPU (tests/cuda/attention_mma_plan_test.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "device_tasks.hpp"
#include "kv_layouts.hpp"
#include "tessera/plugin_abi.h"

namespace tessera::mma {

// What the device offers; read once at create().
struct DeviceLimits {
  int32_t sm_count = 1;
  int64_t smem_per_block = int64_t{48} * 1024;  // opt-in maximum of dynamic shared memory per block
  int64_t smem_per_sm = int64_t{100} * 1024;
};

// Byte offsets of the sections of the caller's workspace (each 256-byte aligned). The metadata
// sections [0, metadata_bytes) are copied from the host in one transfer.
struct WorkspaceLayout {
  size_t counts = 0;  // WorkCounts
  size_t tasks = 0, attention_items = 0, combine_items = 0, indexer_items = 0;
  size_t window_offsets = 0, comp_offsets = 0, index_offsets = 0;
  size_t metadata_bytes = 0;
  size_t scores = 0, selected = 0, partial_o = 0, partial_ml = 0;
  size_t total = 0;
};

// Blocks of each kernel's grid: the plan's own counts, or a shape's capacity (shaped runs).
struct Grids {
  int32_t tasks = 0, attention_items = 0, combine_items = 0, indexer_items = 0;
};

// Where one sequence's slots land in the offset arrays.
struct SequenceSlots {
  int32_t window_base = 0, n_window = 0;  // window slots from window_first_position
  int32_t comp_base = 0, n_comp = 0;      // compressed entries visible to the last query
};

struct WorkPlan {
  std::vector<TokenTask> tasks;
  std::vector<AttentionItem> attention_items;
  std::vector<CombineItem> combine_items;
  std::vector<IndexerItem> indexer_items;
  std::vector<SequenceSlots> sequences;
  std::vector<int64_t> window_offsets, comp_offsets, index_offsets;  // filled by fill_offsets
  RecordFormat kv_format{}, key_format{};  // read_layout's; zero (bf16 records) by default
  int32_t heads_per_block = 0;
  int32_t head_groups = 0;
  int32_t n_partials = 0;
  int64_t n_scores = 0;        // CSA: sum of visible entries over tokens
  int64_t entries_scored = 0;  // indexer work the items cover (== n_scores)
  size_t attention_smem = 0, indexer_smem = 0, topk_smem = 0;
  Grids grids;
  WorkspaceLayout workspace;
};

// "" when the kernels support the layer's shapes on a device with these limits, else the reason.
std::string check_layer(const ts_attention_layer& layer, const DeviceLimits& limits);
// "" when the batch is well formed for the layer (same rules as the reference backend).
std::string check_batch(const ts_attention_layer& layer, const ts_attention_batch& batch);

// Shared memory of one block of each kernel.
size_t attention_smem_bytes(int32_t heads_per_block, int32_t head_dim);
size_t indexer_smem_bytes(int32_t index_head_dim);
size_t topk_smem_bytes(int32_t topk);

// Splits the batch; deterministic in (layer, batch, limits), so plan() and run() agree.
// Precondition: check_layer and check_batch returned "".
WorkPlan build_work_plan(const ts_attention_layer& layer, const ts_attention_batch& batch,
                         const DeviceLimits& limits);

// The frame of a shaped run (ts_attention_shape, plugin_abi.h) for the layer: block sizes,
// grids at the most items a batch fitting the shape can give, and the workspace laid out for
// them; no tasks. The same for every batch the shape holds. Precondition: check_layer == "".
WorkPlan shaped_frame(const ts_attention_layer& layer, const ts_attention_shape& shape,
                      const DeviceLimits& limits);
// "" or the reason (what of the batch exceeds the shape, or the shape itself is malformed).
std::string check_shape(const ts_attention_shape& shape);
// Lays `plan` (build_work_plan's, of a batch) out in `frame`: padding tokens up to
// shape.n_tokens (no rows: the attention writes their rows as zeros), frame's grids and
// workspace. "" or what of the batch exceeds the shape.
std::string fit_to_shape(WorkPlan& plan, const WorkPlan& frame, const ts_attention_shape& shape);

// Turns slots into byte offsets of records in the pools. "" or the reason (negative slot).
std::string fill_offsets(WorkPlan& plan, const ts_attention_layer& layer,
                         const ts_attention_batch& batch, const ts_kv_layout& main_layout,
                         const ts_kv_layout* index_layout);

// The metadata block [0, workspace.metadata_bytes) as it must appear on the device, written to
// `out` (workspace.metadata_bytes of host memory).
void pack_metadata(const WorkPlan& plan, uint8_t* out);

}  // namespace tessera::mma
