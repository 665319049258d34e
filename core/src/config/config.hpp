// tessera::Config: the whole TOML configuration as a plain struct. Every key, its type, default,
// range and documentation live in one table (config_schema.cpp); the loader validates against
// it, applies its defaults and fills this struct; docs/config.md is rendered from it.
//
// Plugin option tables ([kv_cache.options], [attention.options], [sampler.options] and the extra
// keys of each [[frontend]]) are not interpreted here: they are carried as JSON text and
// validated by the plugin's own schema (PluginRegistry::validate_options).
//
// Thread-safety: loading is a pure function of its input; a Config is a value.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/plugin_abi.h"
#include "util/check.hpp"

namespace tessera {

struct SourceLocation {
  std::string file;
  std::int64_t line = 1;
  std::int64_t column = 1;
  std::string to_string() const;  // "file:line:col"
};

struct ConfigDiagnostic {
  SourceLocation where;
  std::string message;
  std::string to_string() const;  // "file:line:col: message"
};

// Thrown by the loaders; carries every problem found (sorted by position), not just the first.
class ConfigError : public Error {
 public:
  explicit ConfigError(std::vector<ConfigDiagnostic> diagnostics);
  const std::vector<ConfigDiagnostic>& diagnostics() const { return diagnostics_; }

 private:
  std::vector<ConfigDiagnostic> diagnostics_;
};

struct ModelSection {
  std::string path;
  std::int64_t max_context = 0;
  std::string dtype;           // "auto" | "fp32" | "bf16"
  std::string weight_storage;  // "auto" | "fp32"
};

struct ExecutorSection {
  std::string device;       // "cpu" | "cuda"
  std::string cuda_module;  // "native" | "emulated" | a path to a device module
  std::string cpu_forward;  // "host" | "device": which forward device = "cpu" runs
  std::int64_t tensor_parallel = 0;
  std::int64_t threads = 0;               // 0: all hardware threads, shared among the ranks
  std::int64_t reduction_parts = 1;       // row-parallel sums as this many tree-added products
  std::string moe_split;                  // "tp" | "ep": routed experts cut, or whole per rank
  std::string collective_dtype;           // "fp32" | "bf16": the all-reduces' values on the wire
  bool cuda_graphs = true;                // decode steps replay CUDA graphs (device = "cuda")
  std::int64_t cuda_graph_max_batch = 0;  // the largest graph bucket; larger decode steps: eager
};

struct KvCacheSection {
  std::string plugin;
  std::int64_t page_size = 0;  // entries per page
  double memory_gib = 0;
  std::string options_json;  // [kv_cache.options] as a JSON object
};

struct AttentionSection {
  std::string plugin;
  std::string options_json;
};

// What the engine uses when a request leaves a sampling parameter out.
struct SamplingDefaults {
  double temperature = 0;
  double top_p = 0;
  std::int64_t top_k = 0;  // 0: off
  double min_p = 0;
  double repetition_penalty = 0;
  double frequency_penalty = 0;
  double presence_penalty = 0;
  std::int64_t max_tokens = 0;
  std::int64_t seed = 0;  // -1: a fresh random seed per request
};

struct SamplerSection {
  std::string plugin;
  SamplingDefaults defaults;
  std::string options_json;
};

struct FrontendSection {
  std::string plugin;
  std::string options_json;  // every key of the [[frontend]] entry except `plugin`
  SourceLocation plugin_location;
  SourceLocation table_location;
};

struct SchedulerSection {
  std::int64_t max_running_sequences = 0;
  std::int64_t max_batched_tokens = 0;
  std::int64_t chunked_prefill_size = 0;  // 0: a prompt is prefilled in one step
  bool prefix_cache = false;
};

struct LimitsSection {
  std::int64_t max_tokens = 0;
  std::int64_t max_n = 0;
  std::int64_t max_logprobs = 0;
  std::int64_t max_body_bytes = 0;
  std::int64_t max_queue = 0;
};

struct RepetitionGuard {
  std::string mode;  // "off" | "warn" | "stop"
  std::int64_t min_repeats = 0;
  std::int64_t max_ngram = 0;
};

struct GenerationSection {
  RepetitionGuard repetition_guard;
  std::int64_t max_reasoning_tokens = 0;  // 0: unlimited
  std::int64_t min_answer_tokens = 0;
};

struct PluginsSection {
  std::vector<std::string> search_path;  // searched before the built-in default path
};

struct LogSection {
  std::string level;  // "trace" | "debug" | "info" | "warn" | "error" | "off"
};

// Live A/B (docs/ab.md): one arm of [ab]. Its kv_cache, attention and sampler tables are the
// top-level ones with the arm's [ab.<name>.kv_cache] ... written over them (an arm that names
// another plugin starts from that plugin's default options); model, executor, scheduler and the
// rest are shared by every arm.
struct AbArm {
  std::string name;   // [a-z0-9_-]{1,32}
  double weight = 1;  // share of the traffic (the weights need not sum to 1)
  KvCacheSection kv_cache;
  AttentionSection attention;
  SamplerSection sampler;
};

struct AbSection {
  std::vector<std::string> arm_names;  // [ab].arms as written; empty: A/B is off
  std::int64_t report_window = 0;      // recent requests behind /v1/ab/report's percentiles
  std::vector<AbArm> arms;             // one per name, in the same order
};

// One plugin the configuration asks for, with where it was asked for (for error messages).
struct PluginUse {
  ts_plugin_kind kind;
  std::string name;
  std::string options_json;
  std::string section;              // "[kv_cache]", "[[frontend]] entry 2"
  SourceLocation name_location;     // the `plugin = ...` key (or its table, when defaulted)
  SourceLocation options_location;  // the options table (or name_location when absent)
};

struct Config {
  std::string source_name;  // the file path or the virtual name given to load_config_string
  ModelSection model;
  ExecutorSection executor;
  KvCacheSection kv_cache;
  AttentionSection attention;
  SamplerSection sampler;
  std::vector<FrontendSection> frontends;
  SchedulerSection scheduler;
  LimitsSection limits;
  GenerationSection generation;
  PluginsSection plugins;
  LogSection log;
  AbSection ab;

  // Where each key and table was written, by dotted path ("kv_cache.page_size", "sampler"). Keys
  // left to their default are absent.
  std::map<std::string, SourceLocation, std::less<>> locations;

  // The location of `dotted_path`, else of its nearest written parent table, else file:1:1.
  SourceLocation location_of(std::string_view dotted_path) const;

  // kv_cache, attention, sampler, then every frontend in file order, then the plugin tables each
  // [ab] arm writes.
  std::vector<PluginUse> plugin_uses() const;

  // The configuration arm `index` of [ab] runs: this one with the arm's plugin tables.
  Config for_arm(std::size_t index) const;
};

// A Config holding every documented default (model.path, which is required, stays empty).
Config default_config();

// Parses and validates TOML text; `virtual_name` stands for the file name in messages. Throws
// ConfigError with every problem found.
Config load_config_string(std::string_view text, std::string_view virtual_name = "<config>");

// Reads the file (at most kMaxConfigFileBytes) and calls load_config_string. Throws Error when the
// file cannot be read, ConfigError when its content is invalid.
inline constexpr std::size_t kMaxConfigFileBytes = 4u << 20;
Config load_config_file(const std::filesystem::path& path);

}  // namespace tessera
