// The [ab] table of the configuration (live A/B, docs/ab.md): arms inherit the top-level plugin
// tables and write their own over them, every mistake is reported at its file:line:col, and
// plugin_uses() lists what each arm asks for so `tessera config check` validates it.
#include <gtest/gtest.h>

#include <string>

#include "config/config.hpp"

namespace tessera {
namespace {

const std::string kTop = R"(
[model]
path = "m"
[kv_cache]
plugin = "bf16"
page_size = 32
[kv_cache.options]
storage = "fp32"
[sampler.defaults]
temperature = 0.6
max_tokens = 100
)";

std::vector<std::string> errors_of(const std::string& text) {
  try {
    load_config_string(text, "ab.toml");
  } catch (const ConfigError& e) {
    std::vector<std::string> out;
    for (const auto& d : e.diagnostics()) out.push_back(d.to_string());
    return out;
  }
  ADD_FAILURE() << "no error for:\n" << text;
  return {};
}

TEST(ConfigAb, OffByDefault) {
  const Config c = load_config_string(kTop, "ab.toml");
  EXPECT_TRUE(c.ab.arms.empty());
  EXPECT_EQ(c.ab.report_window, 4096);
}

TEST(ConfigAb, ArmsInheritTheTopLevelAndOverrideTheirOwnTables) {
  const Config c = load_config_string(kTop + R"(
[ab]
arms = ["base", "fp8"]
report_window = 100
[ab.fp8]
weight = 3
[ab.fp8.kv_cache]
plugin = "fp8"
[ab.fp8.sampler.defaults]
temperature = 1.0
)",
                                      "ab.toml");
  ASSERT_EQ(c.ab.arms.size(), 2u);
  EXPECT_EQ(c.ab.report_window, 100);
  const AbArm& base = c.ab.arms[0];
  const AbArm& fp8 = c.ab.arms[1];
  EXPECT_EQ(base.name, "base");
  EXPECT_EQ(base.weight, 1.0);
  EXPECT_EQ(base.kv_cache.plugin, "bf16");
  EXPECT_EQ(base.kv_cache.options_json, R"({"storage":"fp32"})");
  EXPECT_EQ(fp8.name, "fp8");
  EXPECT_EQ(fp8.weight, 3.0);
  EXPECT_EQ(fp8.kv_cache.plugin, "fp8");
  // Another plugin: the bf16 options do not follow it.
  EXPECT_EQ(fp8.kv_cache.options_json, default_config().kv_cache.options_json);
  EXPECT_EQ(fp8.kv_cache.page_size, 32);  // inherited
  EXPECT_EQ(fp8.sampler.defaults.temperature, 1.0);
  EXPECT_EQ(fp8.sampler.defaults.max_tokens, 100);  // inherited
  // The top level is untouched by the arms.
  EXPECT_EQ(c.kv_cache.plugin, "bf16");
  EXPECT_EQ(c.sampler.defaults.temperature, 0.6);

  const Config arm = c.for_arm(1);
  EXPECT_EQ(arm.kv_cache.plugin, "fp8");
  EXPECT_EQ(arm.sampler.defaults.temperature, 1.0);
  EXPECT_EQ(arm.model.path, "m");

  // config check validates what the arm writes, under the arm's name, at the arm's line.
  const auto uses = c.plugin_uses();
  const auto it = std::find_if(uses.begin(), uses.end(),
                               [](const PluginUse& u) { return u.section == "[ab.fp8.kv_cache]"; });
  ASSERT_NE(it, uses.end());
  EXPECT_EQ(it->name, "fp8");
  EXPECT_EQ(it->name_location.line, 19);
}

TEST(ConfigAb, SamePluginKeepsTheInheritedOptionsUnlessTheArmWritesItsOwn) {
  const Config c = load_config_string(kTop + R"(
[ab]
arms = ["a", "b"]
[ab.b.kv_cache]
plugin = "bf16"
page_size = 64
[ab.b.kv_cache.options]
storage = "bf16"
)",
                                      "ab.toml");
  EXPECT_EQ(c.ab.arms[0].kv_cache.options_json, R"({"storage":"fp32"})");
  EXPECT_EQ(c.ab.arms[1].kv_cache.options_json, R"({"storage":"bf16"})");
  EXPECT_EQ(c.ab.arms[1].kv_cache.page_size, 64);
}

TEST(ConfigAb, MistakesAreReportedWhereTheyAre) {
  EXPECT_EQ(errors_of(kTop + "[ab]\narms = [\"only\"]\n"),
            std::vector<std::string>{
                "ab.toml:13:1: `ab.arms` needs at least two arms (or none, to turn A/B off)"});
  EXPECT_EQ(errors_of(kTop + "[ab]\narms = [\"a\", \"B b\"]\n"),
            std::vector<std::string>{"ab.toml:13:1: arm name \"B b\" in `ab.arms` must be 1-32 "
                                     "characters of a-z, 0-9, _ and -"});
  EXPECT_EQ(errors_of(kTop + "[ab]\narms = [\"a\", \"a\"]\n"),
            std::vector<std::string>{"ab.toml:13:1: arm \"a\" is named twice in `ab.arms`"});
  // A table for an arm that is not listed.
  EXPECT_EQ(errors_of(kTop + "[ab]\narms = [\"a\", \"b\"]\n[ab.c.kv_cache]\nplugin = \"fp8\"\n"),
            std::vector<std::string>{"ab.toml:14:5: unknown key `c` in [ab] (an arm's table needs "
                                     "its name in `ab.arms`), did you mean `a`?"});
  // An arm's own key, wrong: the arm's dotted path and its line.
  EXPECT_EQ(errors_of(kTop + "[ab]\narms = [\"a\", \"b\"]\n[ab.b.kv_cache]\npage_size = 0\n"),
            std::vector<std::string>{
                "ab.toml:15:13: `ab.b.kv_cache.page_size` = 0 is out of range [1, 4096]"});
  EXPECT_EQ(errors_of(kTop + "[ab]\narms = [\"a\", \"b\"]\n[ab.b]\nmodel = 3\n"),
            std::vector<std::string>{"ab.toml:15:1: unknown key `model` in [ab.b]"});
  EXPECT_EQ(errors_of(kTop + "[ab]\narms = [\"a\", \"b\"]\n[ab.b]\nweight = -1\n"),
            std::vector<std::string>{"ab.toml:15:10: `ab.b.weight` must be a finite number >= "
                                     "0, got a negative or infinite number"});
  EXPECT_EQ(
      errors_of(kTop + "[ab]\narms = [\"a\", \"b\"]\n[ab.a]\nweight = 0\n[ab.b]\nweight = 0\n"),
      std::vector<std::string>{
          "ab.toml:12:1: the weights of the [ab] arms sum to 0: no arm would get traffic"});
  // An arm's max_tokens above the shared limit.
  EXPECT_EQ(errors_of(kTop + "[limits]\nmax_tokens = 150\n[ab]\narms = [\"a\", \"b\"]\n"
                             "[ab.b.sampler.defaults]\nmax_tokens = 160\n"),
            std::vector<std::string>{"ab.toml:17:1: `ab.b.sampler.defaults.max_tokens` = 160 must "
                                     "not exceed `limits.max_tokens` = 150"});
}

}  // namespace
}  // namespace tessera
