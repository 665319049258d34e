// Work descriptions shared by the host planner (work_plan.cpp) and the kernels (kernels/*.cu).
// Plain structs: the planner packs them into the caller's workspace with one host-to-device copy
// at the start of run(), so the kernels never read host memory.
#pragma once

#include <cstdint>

namespace tessera::mma {

inline constexpr int kAttentionTileRows = 32;  // kv rows per attention tile (one pipeline stage)
inline constexpr int kMaxHeadsPerBlock = 64;   // 4 tiles of 16 heads: the mma M dimension
inline constexpr int kIndexerTileKeys = 64;    // indexer keys per tile
inline constexpr int kIndexerThreads = 128;    // 4 warps, one tile of 16 indexer heads each
inline constexpr int kMaxIndexHeads = 64;
inline constexpr int kTopkThreads = 512;
inline constexpr int kMaxTopk = 4096;  // bitonic sort of the chosen keys in shared memory
inline constexpr int kCombineThreads = 128;

// How many tasks and items of each kind a work description holds: the first section of the
// workspace. Each kernel reads its own count and a block at or past it returns at once, so a
// grid sized for a shape (a shaped run, more blocks than items) does the work of its batch.
struct WorkCounts {
  int32_t tasks;
  int32_t attention_items;
  int32_t combine_items;
  int32_t indexer_items;
};

// One query token of the batch. Its attention rows are [window rows | compressed rows]: window
// row i is position lo+i (lo = max(0, p - window + 1)); compressed row j is entry j (HCA) or the
// j-th indexer choice (CSA).
struct TokenTask {
  int64_t position;     // absolute position p
  int64_t score_base;   // CSA: index of this token's first score in the score buffer
  int32_t token;        // row of q / out / index_q / index_w
  int32_t n_window;     // window rows
  int32_t window_base;  // index in window_offsets of window row 0
  int32_t comp_base;    // index in comp_offsets / index_offsets of compressed entry 0
  int32_t n_visible;    // compressed entries visible to p: min(n_compressed, (p + 1) / m)
  int32_t n_comp_rows;  // compressed rows attended: HCA n_visible, CSA min(index_topk, n_visible)
};

// One thread block of the attention kernel: a range of one token's rows for one head group.
struct AttentionItem {
  int32_t task;
  int32_t head_group;  // heads [head_group * heads_per_block, + heads_per_block)
  int32_t row_begin;   // [row_begin, row_end) of the token's row list
  int32_t row_end;
  int32_t partial;  // -1: write the normalized output; else its slot in the partial buffers
};

// A (token, head group) whose rows were split over n_partials blocks (flash-decoding).
struct CombineItem {
  int32_t task;
  int32_t head_group;
  int32_t first_partial;
  int32_t n_partials;
};

// One thread block of the indexer kernel: visible entries [key_begin, key_end) of one token.
struct IndexerItem {
  int32_t task;
  int32_t key_begin;
  int32_t key_end;
};

// How the records a kernel gathers are stored (kv_layouts.hpp). fp8 = 0: `dim` bf16 values per
// record, the other fields unused. fp8 = 1: e4m3 codes whose scales sit at page start +
// scale_offset + entry * scale_stride (entry = offset in the page / record_bytes); main records
// hold `nope` e4m3 bytes then the rope bf16 values, indexer keys only e4m3 bytes.
struct RecordFormat {
  int32_t fp8;
  int32_t nope;  // main fp8 records: e4m3 channels (a multiple of 16)
  int64_t page_bytes, record_bytes, scale_offset, scale_stride;
};

struct AttentionParams {
  const int32_t* n_items;  // WorkCounts::attention_items
  const TokenTask* tasks;
  const AttentionItem* items;
  const int64_t* window_offsets;  // byte offset in kv_pool of each window row's record
  const int64_t* comp_offsets;    // byte offset in kv_pool of each compressed entry's record
  const int32_t* selected;        // CSA: [n_tasks, topk] chosen entries, best first; else null
  const uint8_t* kv_pool;         // records of head_dim values (kv_format)
  const float* q;                 // [n_tokens, n_heads, head_dim], RoPE applied
  const float* sink;              // [n_heads]
  float* out;                     // [n_tokens, n_heads, head_dim]
  float* partial_o;               // [n_partials, heads_per_block, head_dim] unnormalized
  float* partial_ml;              // [n_partials, heads_per_block, 2]: running max (log2), sum
  int32_t topk;
  int32_t n_heads;
  float scale_log2;  // softmax_scale * log2(e): scores in base-2 exponent units
  RecordFormat kv_format;
};

struct CombineParams {
  const int32_t* n_items;  // WorkCounts::combine_items
  const TokenTask* tasks;
  const CombineItem* items;
  const float* sink;        // [n_heads]
  const float* partial_o;   // [n_partials, heads_per_block, head_dim]
  const float* partial_ml;  // [n_partials, heads_per_block, 2]
  float* out;               // [n_tokens, n_heads, head_dim]
  int32_t n_heads;
  int32_t heads_per_block;
  int32_t head_dim;
};

struct IndexerParams {
  const int32_t* n_items;  // WorkCounts::indexer_items
  const TokenTask* tasks;
  const IndexerItem* items;
  const int64_t* index_offsets;  // byte offset in index_pool of each indexer key's record
  const uint8_t* index_pool;     // keys of index_head_dim values (key_format)
  const float* index_q;          // [n_tokens, index_n_heads, index_head_dim]
  const float* index_w;          // [n_tokens, index_n_heads]
  float* scores;                 // [sum of n_visible] fp32
  int32_t n_index_heads;
  RecordFormat key_format;
};

struct TopkParams {
  const int32_t* n_tasks;  // WorkCounts::tasks
  const TokenTask* tasks;
  const float* scores;    // [sum of n_visible]
  int32_t* selected;      // [n_tasks, topk] workspace copy read by the attention kernel
  int32_t* out_selected;  // optional [n_tokens, topk] caller's copy, -1 padded
  int32_t topk;
};

}  // namespace tessera::mma
