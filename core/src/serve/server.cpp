#include "serve/server.hpp"

#include <spdlog/spdlog.h>

#include <csignal>
#include <memory>

#include "chat/chat_encoder.hpp"
#include "comparison/coupled_draw.hpp"
#include "config/config.hpp"
#include "engine/engine.hpp"
#include "engine/engine_options.hpp"
#include "plugins/registry.hpp"
#include "runtime/runtime.hpp"
#include "serve/engine_hooks.hpp"
#include "serve/frontend_host.hpp"
#include "serve/serving_api.hpp"
#include "serve/shutdown_signal.hpp"
#include "tokenizer/model_tokenizer.hpp"
#include "tokenizer/tokenizer.hpp"
#include "weights/dsv4_config.hpp"

namespace tessera::serve {

namespace {

ServingInfo serving_info(const Config& config, const RuntimeOptions& runtime,
                         const ServeOptions& options, bool token_ids_only) {
  ServingInfo info;
  info.model_name = options.served_model_name;
  if (info.model_name.empty()) {
    info.model_name = runtime.model_dir.lexically_normal().filename().string();
    if (info.model_name.empty()) {
      info.model_name = runtime.model_dir.lexically_normal().parent_path().filename().string();
    }
  }
  info.limits.max_context = config.model.max_context;
  info.limits.token_ids_only = token_ids_only;
  info.limits.max_tokens = config.limits.max_tokens;
  info.limits.max_n = config.limits.max_n;
  info.limits.max_logprobs = config.limits.max_logprobs;
  info.limits.default_max_tokens = config.sampler.defaults.max_tokens;
  info.limits.effort_profile = chat::effort_profile_from_string(options.reasoning_effort_profile);
  info.max_body_bytes = config.limits.max_body_bytes;
  info.max_queue = config.limits.max_queue;
  for (const AbArm& arm : config.ab.arms) {
    info.ab_arms.push_back({arm.name, arm.weight});
  }
  info.ab_report_window = static_cast<std::size_t>(config.ab.report_window);
  return info;
}

// One engine with its runtime: the whole server without [ab], one arm of it with.
struct ArmEngine {
  std::unique_ptr<Runtime> runtime;
  std::unique_ptr<engine::Engine> engine;
};

// Every arm's runtime after the first shares the first one's weights (docs/ab.md: arms differ in
// plugins, never in the model).
std::vector<ArmEngine> start_engines(const Config& config, const tokenizer::Tokenizer* tokenizer) {
  std::vector<ArmEngine> arms;
  const std::size_t n = std::max<std::size_t>(config.ab.arms.size(), 1);
  for (std::size_t i = 0; i < n; ++i) {
    const Config arm_config = config.ab.arms.empty() ? config : config.for_arm(i);
    RuntimeOptions options = RuntimeOptions::from_config(arm_config);
    // Arms sample with the coupled draw (comparison/coupled_draw.hpp).
    if (!config.ab.arms.empty()) {
      options.sampler_options_json =
          ab::with_coupled_draw(options.sampler_plugin, options.sampler_options_json);
    }
    ArmEngine arm;
    arm.runtime = arms.empty()
                      ? std::make_unique<Runtime>(options)
                      : std::make_unique<Runtime>(options, arms[0].runtime->shared_model());
    arm.engine = std::make_unique<engine::Engine>(
        *arm.runtime, engine::EngineOptions::from_config(arm_config), tokenizer);
    if (!config.ab.arms.empty()) {
      spdlog::info("A/B arm \"{}\" (weight {}): kv_cache {}, attention {}, sampler {} {}",
                   config.ab.arms[i].name, config.ab.arms[i].weight, options.kv_plugin,
                   options.attention_plugin, options.sampler_plugin, options.sampler_options_json);
    }
    arms.push_back(std::move(arm));
  }
  return arms;
}

std::vector<std::filesystem::path> plugin_directories(const RuntimeOptions& runtime) {
  std::vector<std::filesystem::path> dirs = runtime.plugin_dirs;
  for (auto& d : PluginRegistry::default_search_path()) {
    dirs.push_back(d);
  }
  return dirs;
}

}  // namespace

int run_server(const ServeOptions& options) {
  // Before any thread exists, so every thread inherits the mask and only wait() receives them.
  ShutdownSignal::block();
  const Config config = load_config_file(options.config_path);
  const RuntimeOptions runtime_options = RuntimeOptions::from_config(config);
  tokenizer::ModelTokenizer loaded = tokenizer::load_model_tokenizer(
      runtime_options.model_dir, dsv4::load_model_config(runtime_options.model_dir).vocab_size);
  if (loaded.ids_only) {
    spdlog::warn(
        "{} has no tokenizer.json: prompts must be token ids ('prompt_token_ids', or "
        "'prompt' as an array of ids), and output text reads <id><id>...",
        runtime_options.model_dir.string());
  }
  auto tokenizer = std::make_shared<const tokenizer::Tokenizer>(std::move(loaded.tokenizer));

  // Destruction runs bottom-up: engine (no more callbacks), runtime, frontends, the table, and
  // the registry (plugin libraries) last.
  PluginRegistry registry;
  registry.discover(plugin_directories(runtime_options));
  ServingApi api(serving_info(config, runtime_options, options, loaded.ids_only), tokenizer);
  FrontendHost frontends(registry, config);
  if (frontends.size() == 0) {
    spdlog::warn("the configuration has no [[frontend]] entry: nothing will accept requests");
  }
  frontends.start_all(api.table());

  std::vector<ArmEngine> arms;
  try {
    arms = start_engines(config, tokenizer.get());
  } catch (...) {
    frontends.stop_all(std::chrono::milliseconds(0));
    throw;
  }
  std::vector<EngineHooks> hooks;
  hooks.reserve(arms.size());
  for (auto& arm : arms) {
    hooks.push_back(engine_hooks(*arm.engine, *arm.runtime));
  }
  api.attach(std::move(hooks));
  spdlog::info("serving model \"{}\" (context {} tokens); SIGTERM or Ctrl-C drains and exits",
               api.info().model_name, arms[0].engine->max_context());

  const int sig = ShutdownSignal::wait().value_or(0);
  spdlog::info("{}: draining (up to {} ms)", sig == SIGINT ? "SIGINT" : "SIGTERM",
               options.drain_timeout.count());
  ShutdownSignal::exit_on_second_signal();
  api.set_draining();
  frontends.stop_all(options.drain_timeout);
  // Frontends aborted what was left; the engine answers aborts within a step.
  if (!api.wait_idle(std::chrono::seconds(10))) {
    spdlog::warn("{} requests still in flight after the drain", api.in_flight());
  }
  for (auto& arm : arms) {
    arm.engine.reset();  // every engine before any runtime (shared weights)
  }
  arms.clear();
  spdlog::info("drained; exiting");
  return 0;
}

}  // namespace tessera::serve
