#include "ab/ab_arm.hpp"

#include <fmt/format.h>

#include <array>

#include "comparison/coupled_draw.hpp"
#include "generation/sampling_defaults.hpp"
#include "tokenizer/model_tokenizer.hpp"
#include "util/check.hpp"

namespace tessera::ab {

namespace {

// The arm's explicit [sampler.defaults] keys outrank generation_config.json: an A/B that writes
// `temperature = 0` into one file means it.
void resolve_sampling(Arm& arm) {
  const Config& c = arm.config;
  auto resolved =
      generation::resolve_sampling_defaults(c.sampler.defaults, arm.runtime->options().model_dir);
  arm.sampling = resolved.values;
  arm.sampling_source = resolved.source;
  const SamplingDefaults& toml = c.sampler.defaults;
  auto keep_toml = [&](const char* key, auto SamplingDefaults::*field) {
    if (c.locations.count(std::string("sampler.defaults.") + key) != 0) {
      arm.sampling.*field = toml.*field;
      arm.sampling_source[key] = arm.config_path.filename().string();
    } else if (arm.sampling_source.count(key) == 0) {
      arm.sampling_source[key] = "default";
    }
  };
  keep_toml("temperature", &SamplingDefaults::temperature);
  keep_toml("top_p", &SamplingDefaults::top_p);
  keep_toml("top_k", &SamplingDefaults::top_k);
  keep_toml("min_p", &SamplingDefaults::min_p);
  keep_toml("repetition_penalty", &SamplingDefaults::repetition_penalty);
  keep_toml("frequency_penalty", &SamplingDefaults::frequency_penalty);
  keep_toml("presence_penalty", &SamplingDefaults::presence_penalty);
}

std::shared_ptr<const tokenizer::Tokenizer> load_tokenizer(const Runtime& rt, bool& synthetic) {
  tokenizer::ModelTokenizer loaded =
      tokenizer::load_model_tokenizer(rt.options().model_dir, rt.model_config().vocab_size);
  synthetic = loaded.ids_only;
  return std::make_shared<const tokenizer::Tokenizer>(std::move(loaded.tokenizer));
}

Arm make_arm(std::string name, Config config, const std::vector<std::filesystem::path>& dirs,
             const Arm* share_with) {
  Arm arm;
  arm.name = std::move(name);
  arm.config_path = config.source_name;
  arm.config = std::move(config);
  RuntimeOptions options = RuntimeOptions::from_config(arm.config);
  options.plugin_dirs.insert(options.plugin_dirs.begin(), dirs.begin(), dirs.end());
  options.sampler_options_json =
      with_coupled_draw(options.sampler_plugin, options.sampler_options_json);
  // Same checkpoint, held the same way ([model] weight_storage, and dtype: bf16 activations keep
  // bf16 weights as rows, not panels) on the same device: one copy of the weights.
  const bool share =
      share_with != nullptr &&
      std::filesystem::equivalent(options.model_dir, share_with->runtime->options().model_dir) &&
      options.linear_weights_in_bf16 == share_with->runtime->options().linear_weights_in_bf16 &&
      options.bf16_activations == share_with->runtime->options().bf16_activations &&
      options.device == share_with->runtime->options().device &&
      options.cpu_device_forward == share_with->runtime->options().cpu_device_forward &&
      options.cuda_module == share_with->runtime->options().cuda_module;
  if (share) {
    arm.runtime = std::make_unique<Runtime>(options, share_with->runtime->shared_model());
    arm.tokenizer = share_with->tokenizer;
    arm.tokenizer_is_synthetic = share_with->tokenizer_is_synthetic;
  } else {
    arm.runtime = std::make_unique<Runtime>(options);
    arm.tokenizer = load_tokenizer(*arm.runtime, arm.tokenizer_is_synthetic);
  }
  resolve_sampling(arm);
  const RepetitionGuard& guard = arm.config.generation.repetition_guard;
  arm.repetition_mode = guard.mode.empty() ? "stop" : guard.mode;
  if (guard.min_repeats > 0) arm.repetition.min_repeats = guard.min_repeats;
  if (guard.max_ngram > 0) arm.repetition.max_ngram = guard.max_ngram;
  return arm;
}

}  // namespace

ts_sampling_params Arm::sampling_params(uint64_t seed) const {
  ts_sampling_params p{};
  p.temperature = static_cast<float>(sampling.temperature);
  p.top_p = static_cast<float>(sampling.top_p > 0 ? sampling.top_p : 1.0);
  p.top_k = static_cast<int32_t>(sampling.top_k);
  p.min_p = static_cast<float>(sampling.min_p);
  p.repetition_penalty =
      static_cast<float>(sampling.repetition_penalty > 0 ? sampling.repetition_penalty : 1.0);
  p.frequency_penalty = static_cast<float>(sampling.frequency_penalty);
  p.presence_penalty = static_cast<float>(sampling.presence_penalty);
  p.seed = seed;
  return p;
}

ArmPair make_arm_pair(Config config_a, Config config_b,
                      const std::vector<std::filesystem::path>& extra_plugin_dirs) {
  ArmPair pair;
  pair.a = make_arm("A", std::move(config_a), extra_plugin_dirs, nullptr);
  pair.b = make_arm("B", std::move(config_b), extra_plugin_dirs, &pair.a);
  const SharedModel a = pair.a.runtime->shared_model(), b = pair.b.runtime->shared_model();
  pair.shared_weights =
      (a.host != nullptr && a.host == b.host) || (a.device != nullptr && a.device == b.device);
  const int64_t va = pair.a.runtime->model_config().vocab_size;
  const int64_t vb = pair.b.runtime->model_config().vocab_size;
  TS_CHECK(va == vb,
           "A/B: the arms' models have different vocabularies ({} vs {} tokens); teacher-forced "
           "scoring needs one token space",
           va, vb);
  return pair;
}

ArmPair load_arm_pair(const std::filesystem::path& config_a, const std::filesystem::path& config_b,
                      const std::vector<std::filesystem::path>& extra_plugin_dirs) {
  return make_arm_pair(load_config_file(config_a), load_config_file(config_b), extra_plugin_dirs);
}

std::vector<std::array<std::string, 3>> config_differences(const Arm& a, const Arm& b) {
  std::vector<std::array<std::string, 3>> out;
  auto add = [&out](const char* key, const std::string& x, const std::string& y) {
    if (x != y) out.push_back({key, x, y});
  };
  auto num = [](double v) { return fmt::format("{}", v); };
  const Config& x = a.config;
  const Config& y = b.config;
  add("model.path", std::filesystem::weakly_canonical(a.runtime->options().model_dir).string(),
      std::filesystem::weakly_canonical(b.runtime->options().model_dir).string());
  add("model.max_context", num(x.model.max_context), num(y.model.max_context));
  add("executor.device", x.executor.device, y.executor.device);
  add("executor.cpu_forward", x.executor.cpu_forward, y.executor.cpu_forward);
  add("executor.tensor_parallel", num(x.executor.tensor_parallel), num(y.executor.tensor_parallel));
  add("executor.reduction_parts", num(x.executor.reduction_parts), num(y.executor.reduction_parts));
  add("kv_cache.plugin", x.kv_cache.plugin, y.kv_cache.plugin);
  add("kv_cache.options", x.kv_cache.options_json, y.kv_cache.options_json);
  add("kv_cache.page_size", num(x.kv_cache.page_size), num(y.kv_cache.page_size));
  add("kv_cache.memory_gib", num(x.kv_cache.memory_gib), num(y.kv_cache.memory_gib));
  add("attention.plugin", x.attention.plugin, y.attention.plugin);
  add("attention.options", x.attention.options_json, y.attention.options_json);
  add("sampler.plugin", x.sampler.plugin, y.sampler.plugin);
  add("sampler.options", x.sampler.options_json, y.sampler.options_json);
  const SamplingDefaults& s = a.sampling;
  const SamplingDefaults& t = b.sampling;
  add("sampling.temperature", num(s.temperature), num(t.temperature));
  add("sampling.top_p", num(s.top_p), num(t.top_p));
  add("sampling.top_k", num(s.top_k), num(t.top_k));
  add("sampling.min_p", num(s.min_p), num(t.min_p));
  add("sampling.repetition_penalty", num(s.repetition_penalty), num(t.repetition_penalty));
  add("sampling.frequency_penalty", num(s.frequency_penalty), num(t.frequency_penalty));
  add("sampling.presence_penalty", num(s.presence_penalty), num(t.presence_penalty));
  add("generation.repetition_guard.mode", a.repetition_mode, b.repetition_mode);
  add("generation.repetition_guard.min_repeats", num(a.repetition.min_repeats),
      num(b.repetition.min_repeats));
  add("generation.repetition_guard.max_ngram", num(a.repetition.max_ngram),
      num(b.repetition.max_ngram));
  return out;
}

}  // namespace tessera::ab
