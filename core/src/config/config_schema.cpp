// The one place where the configuration's tables and keys are declared. Add a key here (and a
// member to Config): validation, defaults and docs/config.md follow from this entry.
#include "config/config_schema.hpp"

#include <limits>

namespace tessera::config_schema {

namespace {

// Field accessor for a Config member: TS_CONFIG_FIELD(kv_cache.page_size).
#define TS_CONFIG_FIELD(member) \
  [](Config & c) -> auto& { return c.member; }

constexpr std::int64_t kMebi = 1 << 20;
constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();

KeySpec text(std::string_view table, std::string_view key, StringField field,
             DefaultValue default_value, std::string_view doc) {
  return KeySpec{table, key, field, std::move(default_value), {}, {}, {}, doc};
}

KeySpec choice(std::string_view table, std::string_view key, StringField field,
               std::string_view default_value, std::vector<std::string_view> choices,
               std::string_view doc) {
  return KeySpec{table, key, field, default_value, {}, {}, std::move(choices), doc};
}

KeySpec integer(std::string_view table, std::string_view key, IntegerField field,
                std::int64_t default_value, IntegerRange range, std::string_view doc) {
  return KeySpec{table, key, field, default_value, range, {}, {}, doc};
}

KeySpec real(std::string_view table, std::string_view key, FloatField field, double default_value,
             FloatRange range, std::string_view doc) {
  return KeySpec{table, key, field, default_value, {}, range, {}, doc};
}

KeySpec boolean(std::string_view table, std::string_view key, BoolField field, bool default_value,
                std::string_view doc) {
  return KeySpec{table, key, field, default_value, {}, {}, {}, doc};
}

KeySpec string_list(std::string_view table, std::string_view key, StringListField field,
                    std::vector<std::string_view> default_value, std::string_view doc) {
  return KeySpec{table, key, field, std::move(default_value), {}, {}, {}, doc};
}

}  // namespace

const std::vector<TableSpec>& tables() {
  static const std::vector<TableSpec> kTables = {
      {"model", TableKind::kFixed, nullptr, "The checkpoint to serve."},
      {"executor", TableKind::kFixed, nullptr, "Where the model runs."},
      {"kv_cache", TableKind::kFixed, nullptr,
       "The KV-cache format plugin and how much memory it gets."},
      {"kv_cache.options", TableKind::kOptions, TS_CONFIG_FIELD(kv_cache.options_json),
       "Options of the kv-cache plugin, validated by that plugin's schema "
       "(`tessera plugins` shows it)."},
      {"attention", TableKind::kFixed, nullptr, "The attention backend plugin."},
      {"attention.options", TableKind::kOptions, TS_CONFIG_FIELD(attention.options_json),
       "Options of the attention plugin, validated by that plugin's schema."},
      {"sampler", TableKind::kFixed, nullptr, "The sampler plugin."},
      {"sampler.defaults", TableKind::kFixed, nullptr,
       "Sampling parameters used when a request leaves them out. A request's own values always "
       "win (within [limits])."},
      {"sampler.options", TableKind::kOptions, TS_CONFIG_FIELD(sampler.options_json),
       "Options of the sampler plugin, validated by that plugin's schema."},
      {"frontend", TableKind::kPluginEntries, nullptr,
       "Zero or more `[[frontend]]` entries. Each names its `plugin` (required, e.g. \"http\" or "
       "\"grpc\"); every other key of the entry (`listen`, ...) is an option of that plugin, "
       "validated by the plugin's schema. Two entries may use the same plugin (e.g. two ports)."},
      {"scheduler", TableKind::kFixed, nullptr, "Continuous batching."},
      {"limits", TableKind::kFixed, nullptr,
       "Hard per-request and per-server limits. A request beyond them is refused with a clear "
       "error (HTTP 400), never truncated silently."},
      {"generation", TableKind::kFixed, nullptr, "Generation policies applied by the engine."},
      {"generation.repetition_guard", TableKind::kFixed, nullptr,
       "Degeneration detector: the output ends with an n-gram (length 1..max_ngram) repeated "
       "back to back at least min_repeats times."},
      {"ab", TableKind::kFixed, nullptr,
       "Live A/B test (docs/ab.md): one server, two or more arms sharing the weights. Each arm "
       "named in `arms` may have a table `[ab.<arm>]` with `weight` (share of the traffic, "
       "default 1) and its own `kv_cache`, `attention` and `sampler` tables (with `options` and "
       "`sampler.defaults`), written over the top-level ones; an arm that names another plugin "
       "starts from that plugin's default options. A request is assigned by a hash of its "
       "`user` field (else its `X-Request-Id` header, else at random) or pinned with the "
       "`X-Tessera-Arm` header; /metrics labels every series with `arm` and `/v1/ab/report` "
       "returns the running comparison."},
      {"plugins", TableKind::kFixed, nullptr, "Where plugins are looked for."},
      {"log", TableKind::kFixed, nullptr, "Logging."},
  };
  return kTables;
}

const std::vector<KeySpec>& keys() {
  static const std::vector<KeySpec> kKeys = {
      // [model]
      text("model", "path", TS_CONFIG_FIELD(model.path), Required{},
           "Directory of a Hugging Face checkpoint (`config.json`, `*.safetensors`, "
           "`tokenizer.json`). "
           "A relative path is looked up in the working directory, then next to the config file."),
      integer("model", "max_context", TS_CONFIG_FIELD(model.max_context), 8192, {1, kMebi},
              "Longest sequence (prompt + output) served, in tokens. Bounds KV memory per "
              "sequence; DeepSeek-V4 supports up to 1M."),
      choice("model", "dtype", TS_CONFIG_FIELD(model.dtype), "auto", {"auto", "fp32", "bf16"},
             "Activation dtype of the core ops. \"auto\": fp32 on CPU (the reference path), "
             "bf16 on CUDA. Accumulation is fp32 in every case. \"bf16\" on the CPU: every "
             "linear layer whose weight is held in bf16 rounds its input to bf16 and multiplies "
             "on vdpbf16ps, or on AMX tiles with TESSERA_AMX=1 in the environment where the CPU "
             "has them (2x the batched throughput, batch 1 ~30% slower: docs/perf.md) (other "
             "ops stay fp32; logits move by ~1e-3 relative); needs "
             "AVX512_BF16 and weight_storage = \"auto\", else refused."),
      choice("model", "weight_storage", TS_CONFIG_FIELD(model.weight_storage), "auto",
             {"auto", "fp32"},
             "How linear weights are held in memory. \"auto\": in bf16 when every value is a "
             "bfloat16 (BF16, FP8 and FP4 checkpoints: lossless, same outputs, half the bytes) "
             "and the CPU runs our GEMM (AVX-512, or AVX2 + FMA), else fp32. \"fp32\": all "
             "widened to fp32 (the A/B baseline). Either way, where our GEMM runs they are "
             "packed into "
             "panels of 16 outputs for its outer-product kernel (bf16 ones stay rows when dtype "
             "= \"bf16\"), and they are copied into one arena on 2 MiB pages where the kernel "
             "grants them (same values; fewer TLB misses when a step streams them)."),
      // [executor]
      choice("executor", "device", TS_CONFIG_FIELD(executor.device), "cpu", {"cpu", "cuda"},
             "\"cpu\" runs every rank on host threads; \"cuda\" puts rank i on GPU i."),
      text("executor", "cuda_module", TS_CONFIG_FIELD(executor.cuda_module),
           std::string_view("native"),
           "The CUDA device module for device = \"cuda\": \"native\" (the GPU's, "
           "libtessera_cuda.so), \"emulated\" (the SIMT emulator on the CPU, "
           "libtessera_cuda_emulated.so: every kernel on a machine without a GPU, slowly) or the "
           "path of a module file (docs/cuda.md)."),
      choice("executor", "cpu_forward", TS_CONFIG_FIELD(executor.cpu_forward), "host",
             {"host", "device"},
             "Which forward device = \"cpu\" runs. \"host\": the host forward, the fastest "
             "on a CPU; FP8 layers multiply the dequantised weights, as transformers does. "
             "\"device\": the device forward on the device layer's cpu backend, the one a GPU "
             "runs (docs/cuda.md): weights stay in the checkpoint's formats (less memory), FP8 "
             "layers are W8A8 as the official inference code computes them, and moe_split = "
             "\"ep\" and collective_dtype = \"bf16\" apply; model.dtype = \"bf16\" and "
             "reduction_parts are host-forward options. No effect with device = \"cuda\"."),
      integer("executor", "tensor_parallel", TS_CONFIG_FIELD(executor.tensor_parallel), 1, {1, 8},
              "Number of ranks (one per GPU, or CPU ranks in one process)."),
      integer("executor", "threads", TS_CONFIG_FIELD(executor.threads), 0, {0, 1024},
              "CPU worker threads in all; 0 uses every hardware thread, shared among the ranks."),
      integer("executor", "reduction_parts", TS_CONFIG_FIELD(executor.reduction_parts), 1, {1, 64},
              "The sums a tensor-parallel split shares (attention's wo_b, the experts' w2) run as "
              "this many products over equal input ranges, added by a fixed pairwise tree that "
              "the CPU ranks' all-reduce continues: with any tensor_parallel dividing it, the "
              "logits are bit-identical (docs/engine.md \"Determinism\"). A power of two that "
              "divides those widths and is a multiple of tensor_parallel; 1 (off: one product per "
              "rank) is fastest."),
      choice("executor", "moe_split", TS_CONFIG_FIELD(executor.moe_split), "tp", {"tp", "ep"},
             "How tensor-parallel ranks share the routed experts: \"tp\" cuts every expert's "
             "width between the ranks, \"ep\" gives each rank whole experts (E / "
             "tensor_parallel of them; tokens are replicated, so no all-to-all). The device "
             "forward's ranks only (device = \"cuda\", or cpu_forward = \"device\") "
             "(docs/engine.md)."),
      choice("executor", "collective_dtype", TS_CONFIG_FIELD(executor.collective_dtype), "fp32",
             {"fp32", "bf16"},
             "The values the device ranks' two all-reduces per layer (after wo_b and after the "
             "MoE) exchange: \"bf16\" halves their bytes and rounds each rank's part and the "
             "sum to bf16; the vocabulary all-gather stays fp32. The device forward's ranks "
             "only (device = \"cuda\", or cpu_forward = \"device\") (docs/engine.md)."),
      boolean("executor", "cuda_graphs", TS_CONFIG_FIELD(executor.cuda_graphs), true,
              "Decode steps (one token per sequence) on a CUDA device replay CUDA graphs of the "
              "forward's work between plugin calls, captured per batch-size bucket after one "
              "eager step. The collectives run eagerly between them; so does the attention "
              "plugin unless it declares \"cuda_graph\" (ABI 1.7: mma), and so do the kv "
              "stores and compressors unless the kv format stores from device slots (ABI 1.6: "
              "bf16, fp8) (docs/cuda.md \"Graphs\"). false runs every step eagerly. No effect "
              "on the CPU."),
      integer("executor", "cuda_graph_max_batch", TS_CONFIG_FIELD(executor.cuda_graph_max_batch),
              256, {1, 4096},
              "The largest decode batch CUDA graphs take. A decode step of T sequences runs its "
              "graphs on the smallest bucket of 1, 2, 4, 8, 16, 24, ... (multiples of 8, the last "
              "one this value) holding T, the rows past T padding; larger steps run eagerly."),
      // [kv_cache]
      text("kv_cache", "plugin", TS_CONFIG_FIELD(kv_cache.plugin), std::string_view("bf16"),
           "KV-cache format plugin: \"bf16\", \"fp8\" or any installed format."),
      integer("kv_cache", "page_size", TS_CONFIG_FIELD(kv_cache.page_size), 64, {1, 4096},
              "Entries per cache page (the allocation and prefix-sharing unit)."),
      real("kv_cache", "memory_gib", TS_CONFIG_FIELD(kv_cache.memory_gib), 2.0,
           {0, 65536, /*min_exclusive=*/true},
           "Memory reserved for cache pages on each rank, in GiB (2^30 bytes): address space, "
           "taken as RAM when pages are first written, on 2 MiB pages where the kernel grants "
           "them."),
      // [attention]
      text("attention", "plugin", TS_CONFIG_FIELD(attention.plugin), std::string_view("reference"),
           "Attention backend plugin: \"reference\" (CPU and CUDA), \"mma\" (CUDA) or any "
           "installed backend."),
      // [sampler]
      text("sampler", "plugin", TS_CONFIG_FIELD(sampler.plugin), std::string_view("standard"),
           "Sampler plugin."),
      real("sampler.defaults", "temperature", TS_CONFIG_FIELD(sampler.defaults.temperature), 1.0,
           {0, 2}, "0 is greedy (argmax)."),
      real("sampler.defaults", "top_p", TS_CONFIG_FIELD(sampler.defaults.top_p), 1.0,
           {0, 1, /*min_exclusive=*/true}, "Nucleus sampling (Holtzman et al. 2019); 1 is off."),
      integer("sampler.defaults", "top_k", TS_CONFIG_FIELD(sampler.defaults.top_k), 0, {0, kMebi},
              "Keep the k most likely tokens; 0 is off."),
      real("sampler.defaults", "min_p", TS_CONFIG_FIELD(sampler.defaults.min_p), 0.0, {0, 1},
           "Drop tokens less likely than min_p times the most likely one; 0 is off."),
      real("sampler.defaults", "repetition_penalty",
           TS_CONFIG_FIELD(sampler.defaults.repetition_penalty), 1.0,
           {0, 10, /*min_exclusive=*/true},
           "CTRL-style penalty on prompt and output tokens (Keskar et al. 2019); 1 is off."),
      real("sampler.defaults", "frequency_penalty",
           TS_CONFIG_FIELD(sampler.defaults.frequency_penalty), 0.0, {-2, 2},
           "OpenAI rule, output tokens only: logit -= penalty * count; 0 is off."),
      real("sampler.defaults", "presence_penalty",
           TS_CONFIG_FIELD(sampler.defaults.presence_penalty), 0.0, {-2, 2},
           "OpenAI rule, output tokens only: logit -= penalty if seen; 0 is off."),
      integer("sampler.defaults", "max_tokens", TS_CONFIG_FIELD(sampler.defaults.max_tokens), 4096,
              {1, kMebi},
              "Output tokens (reasoning included) when a request does not say; at most "
              "limits.max_tokens (a default above it is lowered to it)."),
      integer("sampler.defaults", "seed", TS_CONFIG_FIELD(sampler.defaults.seed), -1,
              {-1, kInt64Max}, "-1 draws a fresh random seed per request."),
      // [scheduler]
      integer("scheduler", "max_running_sequences",
              TS_CONFIG_FIELD(scheduler.max_running_sequences), 64, {1, 4096},
              "Sequences decoded together in one step; at most max_batched_tokens (every one "
              "decodes a token per step; a default above it is lowered to it)."),
      integer("scheduler", "max_batched_tokens", TS_CONFIG_FIELD(scheduler.max_batched_tokens),
              8192, {1, kMebi}, "Tokens (prefill + decode) in one step."),
      integer("scheduler", "chunked_prefill_size", TS_CONFIG_FIELD(scheduler.chunked_prefill_size),
              2048, {0, kMebi},
              "Longest prefill chunk, so long prompts do not stall decoding; 0 prefills a "
              "prompt in one step. At most max_batched_tokens (a default above it is lowered "
              "to it)."),
      boolean("scheduler", "prefix_cache", TS_CONFIG_FIELD(scheduler.prefix_cache), true,
              "Reuse the KV pages of a shared prompt prefix (whole pages only)."),
      // [limits]
      integer("limits", "max_tokens", TS_CONFIG_FIELD(limits.max_tokens), 8192, {1, kMebi},
              "Largest max_tokens a request may ask for; at most model.max_context (a default "
              "above it is lowered to it)."),
      integer("limits", "max_n", TS_CONFIG_FIELD(limits.max_n), 8, {1, 128},
              "Largest n (choices per request)."),
      integer("limits", "max_logprobs", TS_CONFIG_FIELD(limits.max_logprobs), 20, {0, 100},
              "Largest top_logprobs a request may ask for (OpenAI allows 20)."),
      integer("limits", "max_body_bytes", TS_CONFIG_FIELD(limits.max_body_bytes), 8 * kMebi,
              {1024, 1024 * kMebi}, "Largest request body a frontend accepts, in bytes."),
      integer(
          "limits", "max_queue", TS_CONFIG_FIELD(limits.max_queue), 1024, {1, kMebi},
          "Sequences (n choices x prompts) waiting beyond max_running_sequences; a request "
          "that would exceed it is refused (HTTP 429), one larger than it can never fit (400)."),
      // [generation]
      choice("generation.repetition_guard", "mode",
             TS_CONFIG_FIELD(generation.repetition_guard.mode), "stop", {"off", "warn", "stop"},
             "\"stop\" ends a looping choice (finish_reason \"repetition\"); \"warn\" only "
             "counts it in the metrics and logs; \"off\" skips the check (docs/generation.md)."),
      integer("generation.repetition_guard", "min_repeats",
              TS_CONFIG_FIELD(generation.repetition_guard.min_repeats), 4, {2, 1024},
              "Back-to-back repeats of one n-gram that count as degenerate (the span must also "
              "reach 64 tokens or 128 characters)."),
      integer("generation.repetition_guard", "max_ngram",
              TS_CONFIG_FIELD(generation.repetition_guard.max_ngram), 32, {1, 1024},
              "Longest n-gram checked."),
      integer("generation", "max_reasoning_tokens",
              TS_CONFIG_FIELD(generation.max_reasoning_tokens), 0, {0, kMebi},
              "Thinking-mode budget: past it the engine closes the reasoning block and the answer "
              "follows; 0 is unlimited."),
      integer("generation", "min_answer_tokens", TS_CONFIG_FIELD(generation.min_answer_tokens), 0,
              {0, kMebi},
              "Tokens of max_tokens kept for the answer: reasoning is closed once fewer remain."),
      // [ab]
      string_list("ab", "arms", TS_CONFIG_FIELD(ab.arm_names), {},
                  "Names of the arms ([a-z0-9_-], at most 32 characters), at least two; empty "
                  "turns A/B off."),
      integer("ab", "report_window", TS_CONFIG_FIELD(ab.report_window), 4096, {16, kMebi},
              "Most recent requests per arm behind the latency percentiles of /v1/ab/report."),
      // [plugins]
      string_list("plugins", "search_path", TS_CONFIG_FIELD(plugins.search_path), {},
                  "Directories searched for plugins before the default path "
                  "($TESSERA_PLUGIN_PATH, <exe dir>/plugins, the install dir)."),
      // [log]
      choice("log", "level", TS_CONFIG_FIELD(log.level), "info",
             {"trace", "debug", "info", "warn", "error", "off"}, "Least severe level printed."),
  };
  return kKeys;
}

#undef TS_CONFIG_FIELD

}  // namespace tessera::config_schema
