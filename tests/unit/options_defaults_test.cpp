// The configuration schema (config/config_schema.cpp) is the one source of defaults: every options
// struct that carries a configuration key starts from the key's schema default. A default written
// again in a struct (and drifted: kv_cache.memory_gib was once 1.0 there, 2.0 in the schema)
// fails here.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "ab/ab_arm.hpp"
#include "config/config.hpp"
#include "config/config_schema.hpp"
#include "engine/engine_options.hpp"
#include "generation/repetition_guard.hpp"
#include "runtime/generator.hpp"
#include "runtime/runtime_options.hpp"
#include "serve/serve_request.hpp"
#include "serve/serving_api.hpp"

namespace tessera {
namespace {

// The schema's default of `table`.`key`, read from the key table itself (not through
// default_config(), which the structs may use).
template <typename T>
T schema_default(std::string_view table, std::string_view key) {
  const config_schema::KeySpec* spec = config_schema::find_key(table, key);
  EXPECT_NE(spec, nullptr) << table << "." << key;
  if (spec == nullptr) return T{};
  if constexpr (std::is_same_v<T, std::string>) {
    return std::string(std::get<std::string_view>(spec->default_value));
  } else {
    return std::get<T>(spec->default_value);
  }
}

std::int64_t integer(std::string_view table, std::string_view key) {
  return schema_default<std::int64_t>(table, key);
}
double real(std::string_view table, std::string_view key) {
  return schema_default<double>(table, key);
}
std::string text(std::string_view table, std::string_view key) {
  return schema_default<std::string>(table, key);
}

TEST(OptionsDefaults, RuntimeOptionsAreTheSchemas) {
  const RuntimeOptions o;
  EXPECT_TRUE(o.model_dir.empty());
  EXPECT_EQ(o.kv_plugin, text("kv_cache", "plugin"));
  EXPECT_EQ(o.attention_plugin, text("attention", "plugin"));
  EXPECT_EQ(o.sampler_plugin, text("sampler", "plugin"));
  EXPECT_EQ(o.kv_options_json, "{}");
  EXPECT_EQ(o.attention_options_json, "{}");
  EXPECT_EQ(o.sampler_options_json, "{}");
  EXPECT_EQ(o.page_size, integer("kv_cache", "page_size"));
  EXPECT_EQ(o.memory_gib, real("kv_cache", "memory_gib"));
  EXPECT_EQ(o.max_context, integer("model", "max_context"));
  EXPECT_EQ(o.max_running_sequences, integer("scheduler", "max_running_sequences"));
  EXPECT_TRUE(o.plugin_dirs.empty());
  EXPECT_EQ(o.linear_weights_in_bf16, text("model", "weight_storage") == "auto");
  EXPECT_EQ(o.bf16_activations, text("model", "dtype") == "bf16");
}

TEST(OptionsDefaults, EngineOptionsAreTheSchemas) {
  const engine::EngineOptions o;
  EXPECT_EQ(o.max_running_sequences, integer("scheduler", "max_running_sequences"));
  EXPECT_EQ(o.max_batched_tokens, integer("scheduler", "max_batched_tokens"));
  EXPECT_EQ(o.chunked_prefill_size, integer("scheduler", "chunked_prefill_size"));
  EXPECT_EQ(o.prefix_cache, schema_default<bool>("scheduler", "prefix_cache"));
  EXPECT_EQ(o.max_context, 0);  // the runtime's
  EXPECT_EQ(o.max_tokens_limit, integer("limits", "max_tokens"));
  EXPECT_EQ(o.max_logprobs, integer("limits", "max_logprobs"));
  EXPECT_EQ(o.max_queue, integer("limits", "max_queue"));
  EXPECT_EQ(o.tensor_parallel, integer("executor", "tensor_parallel"));
  EXPECT_EQ(o.reduction_parts, integer("executor", "reduction_parts"));
  EXPECT_EQ(o.threads, integer("executor", "threads"));
  EXPECT_EQ(o.repetition_mode, text("generation.repetition_guard", "mode"));
  EXPECT_EQ(o.repetition.min_repeats, integer("generation.repetition_guard", "min_repeats"));
  EXPECT_EQ(o.repetition.max_ngram, integer("generation.repetition_guard", "max_ngram"));
  EXPECT_EQ(o.max_reasoning_tokens, integer("generation", "max_reasoning_tokens"));
  EXPECT_EQ(o.min_answer_tokens, integer("generation", "min_answer_tokens"));

  const SamplingDefaults& d = o.defaults;
  EXPECT_EQ(d.temperature, real("sampler.defaults", "temperature"));
  EXPECT_EQ(d.top_p, real("sampler.defaults", "top_p"));
  EXPECT_EQ(d.top_k, integer("sampler.defaults", "top_k"));
  EXPECT_EQ(d.min_p, real("sampler.defaults", "min_p"));
  EXPECT_EQ(d.repetition_penalty, real("sampler.defaults", "repetition_penalty"));
  EXPECT_EQ(d.frequency_penalty, real("sampler.defaults", "frequency_penalty"));
  EXPECT_EQ(d.presence_penalty, real("sampler.defaults", "presence_penalty"));
  EXPECT_EQ(d.max_tokens, integer("sampler.defaults", "max_tokens"));
  EXPECT_EQ(d.seed, integer("sampler.defaults", "seed"));
}

// Structs that still write a key's default as a literal: they must agree with the schema.
TEST(OptionsDefaults, LiteralDefaultsAgreeWithTheSchema) {
  const generation::RepetitionGuardOptions guard;
  EXPECT_EQ(guard.min_repeats, integer("generation.repetition_guard", "min_repeats"));
  EXPECT_EQ(guard.max_ngram, integer("generation.repetition_guard", "max_ngram"));
  EXPECT_EQ(GenerateRequest{}.repetition_mode, text("generation.repetition_guard", "mode"));
  EXPECT_EQ(ab::Arm{}.repetition_mode, text("generation.repetition_guard", "mode"));

  const serve::ServeLimits limits;
  EXPECT_EQ(limits.max_tokens, integer("limits", "max_tokens"));
  EXPECT_EQ(limits.max_n, integer("limits", "max_n"));
  EXPECT_EQ(limits.max_logprobs, integer("limits", "max_logprobs"));
  EXPECT_EQ(limits.default_max_tokens, integer("sampler.defaults", "max_tokens"));
  const serve::ServingInfo info;
  EXPECT_EQ(info.max_body_bytes, integer("limits", "max_body_bytes"));
  EXPECT_EQ(info.max_queue, integer("limits", "max_queue"));
  EXPECT_EQ(static_cast<std::int64_t>(info.ab_report_window), integer("ab", "report_window"));
}

}  // namespace
}  // namespace tessera
