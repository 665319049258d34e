/* The C table between the "reference" attention plugin and its CUDA module (docs/plugins.md,
 * "Plugins with device code"): libtessera_attention_reference_cuda.so (nvcc) or
 * libtessera_attention_reference_cuda_emulated.so (SIMT emulator), loaded by the plugin only for a
 * CUDA device. Functions return NULL on success or the reason they failed (owned by the module,
 * valid until the next call on the same thread). */
#ifndef TESSERA_ATTENTION_REFERENCE_CUDA_API_H
#define TESSERA_ATTENTION_REFERENCE_CUDA_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TS_REFERENCE_CUDA_ENTRY_SYMBOL "tessera_attention_reference_cuda_entry"

typedef struct ts_reference_cuda_layer {
  int32_t n_heads, head_dim, window, compress_ratio;
  int32_t index_n_heads, index_head_dim, index_topk;
  float softmax_scale;
} ts_reference_cuda_layer;

/* One sequence of a batch; every pointer is device memory, offset to the sequence's first query.
 * Query i sits at absolute position first_position + i. */
typedef struct ts_reference_cuda_sequence {
  const float* q;       /* [n_queries, n_heads, head_dim] */
  const float* index_q; /* [n_queries, index_n_heads, index_head_dim]      (CSA) */
  const float* index_w; /* [n_queries, index_n_heads]                       (CSA) */
  const float* sink;    /* [n_heads] */
  float* out;           /* [n_queries, n_heads, head_dim] */
  int32_t* selected;    /* [n_queries, index_topk] or NULL                  (CSA) */
  /* [n_window + n_compressed, head_dim]: the window rows of positions window_first_position ..,
   * then compressed entries 0 .. n_compressed - 1 (decoded by the kv format's load) */
  const float* rows;
  const float* keys;   /* [n_compressed, index_head_dim] indexer keys          (CSA) */
  float* scores;       /* [n_queries, n_compressed] scratch                    (CSA) */
  int32_t* candidates; /* [n_queries, index_topk] scratch                      (CSA) */
  int32_t* picks;      /* [n_queries, index_topk] the chosen entries, best first (CSA) */
  int64_t first_position, window_first_position, n_window, n_compressed;
  int32_t n_queries;
  int32_t max_rows; /* rows one query attends, at most (window + compressed): shared memory */
} ts_reference_cuda_sequence;

typedef struct ts_reference_cuda_api {
  uint32_t struct_size;
  /* NULL when device `ordinal` can run the module's kernels, else why not ("no CUDA device: ...").
   */
  const char* (*check_device)(int32_t ordinal);
  /* 1 when p is device memory, 0 when it is host memory. */
  int32_t (*is_device_memory)(const void* p);
  /* Rows one query may attend on device `ordinal` (the attention kernel keeps their weights in
   * shared memory). */
  const char* (*max_rows)(int32_t ordinal, int64_t* rows);
  /* Enqueues on `stream`: the indexer's scores and top-k (CSA), then the sparse attention with
   * the sink, for every query of the sequence. */
  const char* (*enqueue_sequence)(int32_t ordinal, void* stream,
                                  const ts_reference_cuda_layer* layer,
                                  const ts_reference_cuda_sequence* sequence);
} ts_reference_cuda_api;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSERA_ATTENTION_REFERENCE_CUDA_API_H */
