/* Tessera plugin ABI: the one C boundary between the core and its plugins.
 *
 * Rules (docs/plugins.md has the full contract):
 *  - Only POD types, opaque handles and function tables cross this line: no STL, no exceptions,
 *    no RTTI. Every call returns a ts_status; a plugin never aborts the process.
 *  - A plugin exports exactly one symbol, TS_PLUGIN_ENTRY_SYMBOL, returning a static descriptor.
 *  - Versioning: abi_major must equal the host's; abi_minor must not exceed the host's. Tables are
 *    append-only and start with their struct_size, so a reader never touches a slot the writer
 *    lacks.
 *  - The core owns devices, streams and memory; calls carry the device, the stream and any
 *    caller-provided workspace.
 */
#ifndef TESSERA_PLUGIN_ABI_H
#define TESSERA_PLUGIN_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TS_ABI_MAJOR 1
#define TS_ABI_MINOR 7
#define TS_PLUGIN_ENTRY_SYMBOL "tessera_plugin_entry"

/* ---------------------------------------------------------------- status */
typedef enum ts_status_code {
  TS_OK = 0,
  TS_ERR_INVALID_ARGUMENT = 1, /* caller passed something the contract forbids */
  TS_ERR_UNSUPPORTED = 2,      /* valid, but this plugin cannot do it (device, format, shape) */
  TS_ERR_OUT_OF_MEMORY = 3,
  TS_ERR_NUMERIC = 4,  /* NaN / inf in data that must be finite */
  TS_ERR_INTERNAL = 5, /* a bug or an exception caught at the boundary */
  /* Returned by ts_engine_api calls; frontends map them to their protocol's errors. */
  TS_ERR_BUSY = 6,          /* over capacity (queue full): retry later (HTTP 429) */
  TS_ERR_UNAVAILABLE = 7,   /* not serving now: loading or draining (HTTP 503) */
  TS_ERR_CONTEXT_LENGTH = 8 /* prompt + max_tokens beyond the context (HTTP 400) */
} ts_status_code;

/* message is owned by the plugin and stays valid until the next call into the same plugin from
 * the same thread; NULL when code == TS_OK. */
typedef struct ts_status {
  int32_t code;
  const char* message;
} ts_status;

/* ---------------------------------------------------------------- kinds, devices */
typedef enum ts_plugin_kind {
  TS_KIND_ATTENTION = 1,
  TS_KIND_KV_CACHE = 2,
  TS_KIND_SAMPLER = 3,
  TS_KIND_FRONTEND = 4
} ts_plugin_kind;

typedef enum ts_device_type { TS_DEVICE_CPU = 0, TS_DEVICE_CUDA = 1 } ts_device_type;

typedef struct ts_device {
  int32_t type;    /* ts_device_type */
  int32_t ordinal; /* GPU index for CUDA, 0 for CPU */
  void* stream;    /* cudaStream_t for CUDA, NULL for CPU */
} ts_device;

/* Where the data of a call lives for a CUDA device (type TS_DEVICE_CUDA): tensors (kv rows, q,
 * index_q, index_w, attn_sink, out, selected), cache pools and workspaces are device memory of
 * device.ordinal; descriptions (layouts, layers, batches, sequences) and slot arrays (kv `slots`,
 * window_slots, compressed_slots, indexer_slots) are host memory, read during the call. The call
 * enqueues its device work on device.stream and returns without waiting for it, unless its own
 * comment says otherwise. For a CPU device everything is host memory and done on return. */

/* ABI 1.3: which build of CUDA code serves CUDA devices in this process (ts_host_api.cuda_build).
 * A plugin that keeps its device code in a module of its own loads the build of the same kind
 * (docs/plugins.md, "Plugins with device code"). */
typedef enum ts_cuda_build {
  TS_CUDA_BUILD_NATIVE = 0,  /* nvcc, the GPU's: libtessera_cuda.so */
  TS_CUDA_BUILD_EMULATED = 1 /* the SIMT emulator of core/emulator (CPU): *_emulated.so */
} ts_cuda_build;

/* ---------------------------------------------------------------- host services */
typedef enum ts_log_level {
  TS_LOG_DEBUG = 0,
  TS_LOG_INFO = 1,
  TS_LOG_WARN = 2,
  TS_LOG_ERROR = 3
} ts_log_level;

/* Handed to create(); valid for the life of the instance. Thread-safe. */
typedef struct ts_host_api {
  uint32_t struct_size;
  uint16_t abi_major;
  uint16_t abi_minor;
  void* ctx;
  /* The host tags each line with the plugin name. */
  void (*log)(void* ctx, int32_t level, const char* plugin_name, const char* message);
  /* Appended (present when struct_size covers it; may be NULL): runs fn(arg, i) exactly once for
     every i in [0, n), on the calling thread and the host's compute helpers (the threads its own
     GEMMs use, so a plugin never competes with them for cores), and returns when all are done.
     Which thread runs an item is unspecified; fn must not throw and must not wait for another
     item. Without it, run the items on the calling thread (tessera::sdk::parallel_for does). */
  void (*parallel_for)(void* ctx, int64_t n, void (*fn)(void* arg, int64_t item), void* arg);
  /* ABI 1.3 (present when struct_size covers it; may be NULL): the ts_cuda_build of the device
     module the core runs CUDA devices with (`[executor] cuda_module`). Absent or NULL: native. */
  int32_t (*cuda_build)(void* ctx);
} ts_host_api;

/* ---------------------------------------------------------------- descriptor */
typedef struct ts_instance ts_instance; /* opaque, owned by the plugin */

typedef struct ts_plugin_descriptor {
  uint32_t struct_size;
  uint16_t abi_major;
  uint16_t abi_minor;
  int32_t kind; /* ts_plugin_kind */
  const char* name;
  const char* version;
  const char* build_info_json;     /* {"compiler":..,"cuda":..,"sm":[..]} */
  const char* options_schema_json; /* JSON Schema (subset, docs/plugins.md) of the options */
  const char* capabilities_json;   /* {"devices":["cpu"], ...kind-specific facts} */
  /* Can this plugin run with these options on this device? Cheap, no allocation of devices. */
  ts_status (*check_support)(const char* options_json, ts_device device);
  ts_status (*create)(const ts_host_api* host, const char* options_json, ts_device device,
                      ts_instance** out);
  void (*destroy)(ts_instance* instance);
  /* Kind-specific function table (ts_sampler_table, ts_kv_cache_table, ...). */
  const void* functions;
} ts_plugin_descriptor;

typedef const ts_plugin_descriptor* (*ts_plugin_entry_fn)(void);

/* ---------------------------------------------------------------- sampler */
typedef struct ts_sampling_params {
  float temperature;        /* 0 => greedy (argmax, lowest id on ties) */
  int32_t top_k;            /* 0 => off; negative is invalid (frontends map -1 to 0) */
  float top_p;              /* 1 => off */
  float min_p;              /* 0 => off */
  float repetition_penalty; /* 1 => off; applies to prompt and output tokens (CTRL / HF rule) */
  float frequency_penalty;  /* 0 => off; output tokens only (OpenAI rule) */
  float presence_penalty;   /* 0 => off; output tokens only */
  uint64_t seed;            /* per-request stream: draw i uses (seed, rng_counter) */
  int32_t logprobs;         /* 0: none, 1: logprob of the chosen token */
  int32_t top_logprobs;     /* N most likely tokens with their logprobs (N <= top_capacity) */
} ts_sampling_params;

typedef struct ts_sampler_row {
  /* [vocab] fp32, not modified. ABI 1.5: NULL for a greedy row (ts_sampling_is_greedy) when the
   * plugin's capabilities hold "greedy_from_scan": true; the host then calls sample_scanned or
   * sample_grouped, and the row's scan is its answer (a device forward copies such rows back
   * without their values). */
  const float* logits;
  ts_sampling_params params;
  const int32_t* prompt_tokens; /* for repetition_penalty */
  int64_t n_prompt_tokens;
  const int32_t* output_tokens; /* generated so far, for all penalties */
  int64_t n_output_tokens;
  uint64_t rng_counter; /* index of this draw in the request's stream */
} ts_sampler_row;

typedef struct ts_sampler_result {
  int32_t token;
  float logprob;        /* log_softmax(raw logits)[token] when params.logprobs */
  int32_t n_top;        /* filled count */
  int32_t top_capacity; /* set by the caller: length of the two arrays below */
  int32_t* top_tokens;
  float* top_logprobs;
} ts_sampler_result;

/* What the host already knows of a row's logits (ABI 1.1), found while it wrote them: every value
 * is finite, `max` is the largest and `argmax` the lowest index holding it. ABI 1.5: for a row
 * whose logits are NULL, argmax -1 says the host found a NaN or infinity in it (the plugin answers
 * TS_ERR_NUMERIC for that row). */
typedef struct ts_row_scan {
  float max;
  int32_t argmax;
} ts_row_scan;

/* ABI 1.2: the columns of a row fall into groups, column c into group
 *   (c / TS_LOGIT_GROUP_BLOCK) * TS_LOGIT_GROUP_LANES + c % TS_LOGIT_GROUP_LANES,
 * TS_LOGIT_GROUP_COUNT(vocab) groups in all (the lane of a 16-float vector within a block of 256
 * columns, so a vectorised max over a block finds all of its groups at once). A group of a last,
 * partial block may be empty; its max is then -inf. */
#define TS_LOGIT_GROUP_BLOCK 256
#define TS_LOGIT_GROUP_LANES 16
#define TS_LOGIT_GROUP_COUNT(vocab) \
  ((((int64_t)(vocab) + TS_LOGIT_GROUP_BLOCK - 1) / TS_LOGIT_GROUP_BLOCK) * TS_LOGIT_GROUP_LANES)

/* ABI 1.5: whether the row's token is its logits' argmax and nothing else is asked of them (no
 * penalty, no logprobs), so that the row's scan answers it: what a plugin declaring
 * "greedy_from_scan" accepts with NULL logits. Truncation (top-k/p, min-p) keeps the argmax. */
static inline int ts_sampling_is_greedy(const ts_sampling_params* p) {
  return p->temperature == 0.0f && p->repetition_penalty == 1.0f && p->frequency_penalty == 0.0f &&
         p->presence_penalty == 0.0f && p->logprobs == 0 && p->top_logprobs == 0;
}

/* A row scan with the largest logit of every group (ABI 1.2). */
typedef struct ts_row_groups {
  ts_row_scan scan;
  const float* group_max; /* [TS_LOGIT_GROUP_COUNT(vocab)] */
} ts_row_groups;

typedef struct ts_sampler_table {
  uint32_t struct_size;
  /* rows are independent; results[i] answers rows[i]. Deterministic for a given row whatever
   * the thread count. NaN/inf logits => TS_ERR_NUMERIC naming the row. */
  ts_status (*sample)(ts_instance* self, const ts_sampler_row* rows, int32_t n_rows, int32_t vocab,
                      ts_sampler_result* results);
  /* ABI 1.1, optional (a 1.0 table ends before it, or NULL: the host calls sample). sample, with
   * scans[i] describing rows[i].logits, which the plugin may use instead of reading the row for
   * them; the results must be those sample gives. */
  ts_status (*sample_scanned)(ts_instance* self, const ts_sampler_row* rows,
                              const ts_row_scan* scans, int32_t n_rows, int32_t vocab,
                              ts_sampler_result* results);
  /* ABI 1.2, optional (NULL or absent: the host calls sample_scanned or sample). sample, with
   * groups[i] describing rows[i].logits; the results must be those sample gives. */
  ts_status (*sample_grouped)(ts_instance* self, const ts_sampler_row* rows,
                              const ts_row_groups* groups, int32_t n_rows, int32_t vocab,
                              ts_sampler_result* results);
} ts_sampler_table;

/* ---------------------------------------------------------------- kv cache format */
typedef enum ts_kv_stream {
  TS_KV_MAIN = 0,   /* 512-d latent entries (window + compressed) */
  TS_KV_INDEXER = 1 /* 128-d lightning-indexer keys */
} ts_kv_stream;

/* Byte layout of one page. Entry e of a page sits at:
 *   payload: page + payload_offset + e * payload_stride  (dim - rope_dim values)
 *   rope:    page + rope_offset + e * rope_stride        (rope_dim values; may lie in the record)
 *   scales:  page + scale_offset + e * scale_stride      (0 bytes when unquantized)
 * A slot number s lives in page s / entries_per_page at entry s % entries_per_page. */
typedef struct ts_kv_layout {
  uint32_t struct_size;
  int32_t stream;   /* ts_kv_stream */
  int32_t dim;      /* values per entry */
  int32_t rope_dim; /* trailing channels kept apart (0 if none) */
  int32_t entries_per_page;
  int32_t reserved;
  uint64_t bytes_per_entry; /* payload + rope + scales (+ pad): what memory planning divides by */
  uint64_t page_bytes;
  uint64_t payload_offset, payload_stride;
  uint64_t rope_offset, rope_stride;
  uint64_t scale_offset, scale_stride;
  char payload_dtype[16]; /* "bf16", "fp8_e4m3", ... */
  char rope_dtype[16];
  char scale_dtype[16]; /* "ue8m0", "fp32", "" */
} ts_kv_layout;

/* store and load may run concurrently on one instance, from several threads, on different slots
 * of the same pools (also of the same page): keep the instance stateless or synchronized, and
 * never write bytes outside the entry being stored (docs/kvcache.md). */
typedef struct ts_kv_cache_table {
  uint32_t struct_size;
  ts_status (*describe)(ts_instance* self, int32_t stream, int32_t dim, int32_t rope_dim,
                        int32_t entries_per_page, ts_kv_layout* out);
  /* Encode rows [n, dim] fp32 into slots of a pool of pages (page i at pool + i*page_bytes).
   * Non-finite input => TS_ERR_NUMERIC and nothing written. CUDA device: rows and pool device
   * memory, slots host memory (see ts_device); a format may wait for the stream to check the rows
   * before it enqueues the writes (kvcache_bf16 does: docs/kvcache.md). */
  ts_status (*store)(ts_instance* self, const ts_kv_layout* layout, const float* rows, int64_t n,
                     const int64_t* slots, uint8_t* pool, ts_device device);
  /* Decode slots back into rows [n, dim] fp32 (reference use and tests). CUDA device: pool and
   * rows device memory, slots host memory; enqueued on device.stream. */
  ts_status (*load)(ts_instance* self, const ts_kv_layout* layout, const uint8_t* pool,
                    const int64_t* slots, int64_t n, float* rows, ts_device device);
  /* ABI 1.4, optional (absent or NULL: the host calls store). CUDA devices: store without waiting
   * for the stream. A row holding a non-finite value is not written (its slot keeps its bytes)
   * and its index is min-reduced into *first_bad_row, an int64 in device memory of
   * device.ordinal that the host set to n or more beforehand and reads after synchronising, to
   * refuse the step. Everything else as store. */
  ts_status (*store_async)(ts_instance* self, const ts_kv_layout* layout, const float* rows,
                           int64_t n, const int64_t* slots, uint8_t* pool, ts_device device,
                           int64_t* first_bad_row);
  /* ABI 1.6, optional (absent or NULL: the host calls store_async, outside its CUDA graphs).
   * store_async with `slots` [n] int64 in the device's memory (the host's on a CPU device, where
   * first_bad_row may be NULL and a non-finite row is refused as by store). A negative slot
   * leaves its row unwritten and unchecked (a padding row). On a CUDA device it only enqueues
   * kernels: it reads no slot on the host, copies nothing and never waits, so the host may capture
   * it in a CUDA graph and replay it with new rows, slots and first_bad_row values at the same
   * addresses. */
  ts_status (*store_device_slots)(ts_instance* self, const ts_kv_layout* layout, const float* rows,
                                  int64_t n, const int64_t* slots, uint8_t* pool, ts_device device,
                                  int64_t* first_bad_row);
} ts_kv_cache_table;

/* A kv-cache format instance as seen by an attention backend (so the reference backend can read
 * any format through load). */
typedef struct ts_kv_reader {
  ts_instance* instance;
  const ts_kv_cache_table* table;
  const ts_kv_layout* main_layout;
  const ts_kv_layout* indexer_layout;
} ts_kv_reader;

/* ---------------------------------------------------------------- attention backend */
typedef struct ts_attention_layer {
  uint32_t struct_size;
  int32_t n_heads;        /* query heads on this rank */
  int32_t head_dim;       /* 512 (K == V) */
  int32_t rope_dim;       /* 64 */
  int32_t window;         /* 128: query p sees positions max(0, p-window+1)..p */
  int32_t compress_ratio; /* 0, 4 (CSA, indexer) or 128 (HCA) */
  int32_t index_n_heads;  /* CSA only */
  int32_t index_head_dim;
  int32_t index_topk;
  float softmax_scale;    /* 1/sqrt(head_dim) */
  const float* attn_sink; /* [n_heads] fp32 on the device */
} ts_attention_layer;

/* One sequence's part of a batch. Queries are contiguous rows [query_offset, +n_queries) of the
 * batch tensors, at absolute positions first_position + i. */
typedef struct ts_attention_sequence {
  int32_t query_offset;
  int32_t n_queries;
  int64_t first_position;
  /* window_slots[i] is the main-cache slot of absolute position window_first_position + i, for
   * every position from max(0, first_position - window + 1) to the last query's position. */
  int64_t window_first_position;
  const int64_t* window_slots;
  /* compressed entry k (covering tokens k*m .. k*m+m-1) is in main slot compressed_slots[k] and,
   * for CSA, indexer slot indexer_slots[k]. Entry k is visible to query p iff (k+1)*m <= p+1. */
  int64_t n_compressed;
  const int64_t* compressed_slots;
  const int64_t* indexer_slots;
} ts_attention_sequence;

typedef struct ts_attention_batch {
  uint32_t struct_size;
  int32_t n_sequences;
  int32_t n_tokens;
  const ts_attention_sequence* sequences;
} ts_attention_batch;

typedef struct ts_attention_inputs {
  uint32_t struct_size;
  const float* q;         /* [n_tokens, n_heads, head_dim], RoPE applied */
  const float* index_q;   /* [n_tokens, index_n_heads, index_head_dim] (CSA only) */
  const float* index_w;   /* [n_tokens, index_n_heads] scaled head weights (CSA only) */
  const uint8_t* kv_pool; /* main-cache pages of this layer */
  const uint8_t* index_pool;
  ts_kv_reader kv;
  /* ABI 1.4 (present when struct_size covers it): page-locked host memory for run()'s per-call
   * metadata, host_workspace_bytes of it as the table's plan_host asked (NULL and 0 when it was
   * not asked for, or from a 1.3 host). The device reads it as the stream runs: the host does not
   * reuse it until the stream has passed this call's work, so run() may write its metadata here
   * and copy it into the workspace with cudaMemcpyAsync without staging or waiting (and a CUDA
   * graph may capture that copy). */
  void* host_workspace;
  size_t host_workspace_bytes;
} ts_attention_inputs;

typedef struct ts_attention_outputs {
  uint32_t struct_size;
  float* out;             /* [n_tokens, n_heads, head_dim], before inverse RoPE; run writes
                             every value (the host does not clear it first) */
  int32_t* selected;      /* optional [n_tokens, index_topk] chosen entries, -1 padded */
  int64_t entries_scored; /* indexer work actually done (for the visible-only guarantee) */
} ts_attention_outputs;

/* ABI 1.7: the extent a shaped run lays a batch out for (CUDA graphs). A batch fits the shape
 * when it has at most n_tokens query rows, references at most n_slots cache slots (its
 * sequences' window slots, last query's position - window_first_position + 1 each, plus their
 * compressed entries visible to their last query) and its query tokens see at most n_visible
 * compressed entries in all (sum over the tokens of min(n_compressed, (p + 1) / ratio)). */
typedef struct ts_attention_shape {
  uint32_t struct_size;
  int32_t n_tokens; /* rows of q, index_q, index_w and out the run reads and writes */
  int64_t n_slots;
  int64_t n_visible;
} ts_attention_shape;

/* The halves of a shaped run (ts_attention_table.run_shaped), as bits. */
#define TS_ATTENTION_DESCRIBE 1u /* host: the batch's work description into host_workspace */
#define TS_ATTENTION_LAUNCH 2u   /* device: that description's copy and the kernels, enqueued */

typedef struct ts_attention_table {
  uint32_t struct_size;
  /* Host-side metadata for one batch: how much workspace run() needs. No allocation. */
  ts_status (*plan)(ts_instance* self, const ts_attention_layer* layer,
                    const ts_attention_batch* batch, size_t* workspace_bytes);
  /* CUDA device: memory as ts_device says; the workspace is device memory. */
  ts_status (*run)(ts_instance* self, const ts_attention_layer* layer,
                   const ts_attention_batch* batch, const ts_attention_inputs* in,
                   ts_attention_outputs* out, void* workspace, size_t workspace_bytes,
                   ts_device device);
  /* ABI 1.4, optional (absent or NULL: no host workspace): the page-locked host workspace run()
   * wants for this batch on `device` (ts_attention_inputs.host_workspace; 0 for none). Called
   * after plan() with the same layer and batch. No allocation. */
  ts_status (*plan_host)(ts_instance* self, const ts_attention_layer* layer,
                         const ts_attention_batch* batch, ts_device device,
                         size_t* host_workspace_bytes);
  /* ABI 1.7, optional, for plugins whose capabilities say "cuda_graph": true (absent or NULL:
   * none; the host runs the plugin eagerly). The device workspace and page-locked host workspace
   * of a shaped run for (layer, shape) on `device`: the same for every batch the shape holds. */
  ts_status (*plan_shape)(ts_instance* self, const ts_attention_layer* layer,
                          const ts_attention_shape* shape, ts_device device,
                          size_t* workspace_bytes, size_t* host_workspace_bytes);
  /* run() laid out for `shape`, in the halves `stages` names (TS_ATTENTION_DESCRIBE and/or
   * TS_ATTENTION_LAUNCH; both: one eager call).
   *  - DESCRIBE (host work only, nothing enqueued): writes the work description of `batch`, which
   *    must fit the shape (else TS_ERR_INVALID_ARGUMENT naming what does not), into
   *    in->host_workspace, and sets out->entries_scored.
   *  - LAUNCH: enqueues on device.stream the copy of the description from in->host_workspace
   *    into the workspace and the kernels. Their grids, copy sizes and arguments follow the
   *    layer, the shape and the pointers alone (batch is not read and may be NULL), so a CUDA
   *    graph captured from one LAUNCH replays whatever batch a DESCRIBE last wrote into the same
   *    host workspace, once the host has let the stream pass the previous replay.
   * q, index_q, index_w and out hold shape.n_tokens rows; out's rows past batch.n_tokens are
   * written as zeros; out->selected, when given, holds shape.n_tokens rows. */
  ts_status (*run_shaped)(ts_instance* self, const ts_attention_layer* layer,
                          const ts_attention_batch* batch, const ts_attention_shape* shape,
                          const ts_attention_inputs* in, ts_attention_outputs* out, void* workspace,
                          size_t workspace_bytes, ts_device device, uint32_t stages);
} ts_attention_table;

/* ---------------------------------------------------------------- frontend */
/* The engine as a frontend sees it. Requests and events are JSON text (stable across versions;
 * fields are documented in docs/plugins.md). Callbacks run on engine threads: return quickly. */
typedef void (*ts_event_callback)(void* user, const char* event_json);

typedef struct ts_engine_api {
  uint32_t struct_size;
  void* ctx;
  ts_status (*submit)(void* ctx, const char* request_json, ts_event_callback on_event, void* user,
                      uint64_t* request_id);
  ts_status (*abort)(void* ctx, uint64_t request_id);
  /* Returned strings are owned by the engine, valid until the next call on the same thread. */
  const char* (*model_info_json)(void* ctx);
  const char* (*metrics_text)(void* ctx);
  int32_t (*health)(void* ctx); /* 0 loading, 1 ready, 2 draining */
  /* Buffer convention (tokenize, detokenize, apply_chat_template): the full count goes to *n_ids
   * / *n_bytes and at most `capacity` elements are written; call again when it was larger. */
  ts_status (*tokenize)(void* ctx, const char* text, int32_t* ids, int64_t capacity,
                        int64_t* n_ids);
  ts_status (*detokenize)(void* ctx, const int32_t* ids, int64_t n, char* text, int64_t capacity,
                          int64_t* n_bytes);
  /* Appended slots: check struct_size before calling.
   * The model's chat template applied to {"messages", "tools", "thinking", "reasoning_effort"}:
   * the prompt text submit would build for the same fields. */
  ts_status (*apply_chat_template)(void* ctx, const char* request_json, char* text,
                                   int64_t capacity, int64_t* n_bytes);
  /* The running live A/B comparison as JSON (docs/ab.md, `/v1/ab/report`); NULL when the server
   * runs no [ab]. Owned by the engine, valid until the next call on the same thread. */
  const char* (*ab_report_json)(void* ctx);
} ts_engine_api;

typedef struct ts_frontend_table {
  uint32_t struct_size;
  /* Starts serving (listening) and returns; the engine table outlives the instance. */
  ts_status (*start)(ts_instance* self, const ts_engine_api* engine);
  /* Drain: stop accepting, let in-flight requests finish for at most deadline_ms milliseconds,
   * abort the rest, close everything, return. No engine call is made after it returns. */
  ts_status (*stop)(ts_instance* self, int64_t deadline_ms);
} ts_frontend_table;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSERA_PLUGIN_ABI_H */
