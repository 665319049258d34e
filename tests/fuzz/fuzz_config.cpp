// Fuzzes the TOML configuration loader (toml++ parse + schema walk + option JSON conversion).
// Beyond "no crash, no leak, no UB, no stray exception", it checks the loader's promises:
//  - every diagnostic names the input, a real position (1 <= line <= lines in input) and prints
//    as "file:line:col: message";
//  - a loaded Config holds only values the schema allows (ranges, choices, non-empty strings),
//    obeys the rules between keys, and carries plugin options as JSON objects.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <variant>

#include "config/config.hpp"
#include "config/config_schema.hpp"

namespace {

constexpr std::string_view kName = "fuzz.toml";

void require(bool condition, const char* what, const std::string& detail = "") {
  if (condition) return;
  std::fprintf(stderr, "fuzz_config invariant broken: %s\n%s\n", what, detail.c_str());
  std::abort();
}

void check_diagnostics(const tessera::ConfigError& error, std::string_view text) {
  const auto& diagnostics = error.diagnostics();
  require(!diagnostics.empty(), "ConfigError without diagnostics");
  std::int64_t lines = 1;
  for (char c : text) lines += c == '\n';
  for (const auto& d : diagnostics) {
    require(d.where.file == kName, "diagnostic names another file", d.to_string());
    require(d.where.line >= 1 && d.where.line <= lines, "line outside the input", d.to_string());
    require(d.where.column >= 1, "column < 1", d.to_string());
    require(!d.message.empty(), "empty message", d.to_string());
    const std::string prefix = std::string(kName) + ":" + std::to_string(d.where.line) + ":" +
                               std::to_string(d.where.column) + ": ";
    require(d.to_string().rfind(prefix, 0) == 0, "bad diagnostic prefix", d.to_string());
  }
}

void check_value(const tessera::config_schema::KeySpec& spec, tessera::Config& config) {
  const std::string path = spec.dotted_path();
  std::visit(
      [&](auto field) {
        const auto& value = field(config);
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<T, std::int64_t>) {
          if (spec.integer_range)
            require(value >= spec.integer_range->min && value <= spec.integer_range->max,
                    "integer out of range", path);
        } else if constexpr (std::is_same_v<T, double>) {
          if (spec.float_range) {
            const auto& r = *spec.float_range;
            require((r.min_exclusive ? value > r.min : value >= r.min) && value <= r.max,
                    "float out of range", path);
          }
        } else if constexpr (std::is_same_v<T, std::string>) {
          require(!value.empty(), "empty string", path);
          if (!spec.choices.empty()) {
            bool allowed = false;
            for (auto choice : spec.choices) allowed = allowed || choice == value;
            require(allowed, "string outside its choices", path + " = " + value);
          }
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          for (const auto& item : value) require(!item.empty(), "empty list item", path);
        }
      },
      spec.field);
}

void check_config(tessera::Config& config) {
  require(!config.model.path.empty(), "loaded without model.path");
  for (const auto& spec : tessera::config_schema::keys()) check_value(spec, config);
  require(config.limits.max_tokens <= config.model.max_context, "limits.max_tokens > context");
  require(config.sampler.defaults.max_tokens <= config.limits.max_tokens,
          "sampler.defaults.max_tokens > limits.max_tokens");
  require(config.scheduler.max_running_sequences <= config.scheduler.max_batched_tokens,
          "max_running_sequences > max_batched_tokens");
  require(config.scheduler.chunked_prefill_size <= config.scheduler.max_batched_tokens,
          "chunked_prefill_size > max_batched_tokens");
  // [ab]: none or at least two arms, as named; each arm a configuration the schema allows.
  require(config.ab.arms.size() == config.ab.arm_names.size() && config.ab.arms.size() != 1,
          "[ab] arms do not match ab.arms");
  for (std::size_t i = 0; i < config.ab.arms.size(); ++i) {
    const auto& arm = config.ab.arms[i];
    require(arm.name == config.ab.arm_names[i], "arm out of order", arm.name);
    require(std::isfinite(arm.weight) && arm.weight >= 0, "bad arm weight", arm.name);
    tessera::Config arm_config = config.for_arm(i);
    for (const auto& spec : tessera::config_schema::keys()) check_value(spec, arm_config);
    require(arm_config.sampler.defaults.max_tokens <= arm_config.limits.max_tokens,
            "an arm's sampler.defaults.max_tokens > limits.max_tokens", arm.name);
  }
  for (const auto& use : config.plugin_uses()) {
    require(!use.name.empty(), "plugin without a name", use.section);
    const auto options = nlohmann::json::parse(use.options_json, nullptr, false);
    require(options.is_object(), "plugin options are not a JSON object", use.options_json);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    tessera::Config config = tessera::load_config_string(text, kName);
    check_config(config);
  } catch (const tessera::ConfigError& error) {
    check_diagnostics(error, text);
  }
  // Any other exception escapes and libFuzzer reports it as a crash: the loader promises
  // ConfigError only.
  return 0;
}
