// The TOML configuration: every class of error with its exact file:line:col, defaults, plugin
// option tables as JSON, the shipped configs/, docs/config.md in sync with the schema, and
// `tessera config check`.
#include "config/config.hpp"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.hpp"
#include "config/config_schema.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kSourceDir = TESSERA_SOURCE_DIR;
const fs::path kInvalidDir = kSourceDir / "tests/data/config/invalid";

// Loads text that must be invalid and returns its diagnostics.
std::vector<ConfigDiagnostic> errors_of(const std::string& text) {
  try {
    load_config_string(text, "test.toml");
  } catch (const ConfigError& e) {
    return e.diagnostics();
  }
  ADD_FAILURE() << "no error for:\n" << text;
  return {};
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// ---------------------------------------------------------------- one test per error class

TEST(ConfigErrors, SyntaxErrorHasTomlPosition) {
  const auto errors = errors_of("[model]\npath = \"m\"\nmax_context = = 3\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].where.file, "test.toml");
  EXPECT_EQ(errors[0].where.line, 3);
  EXPECT_EQ(errors[0].where.column, 15);
  EXPECT_EQ(errors[0].to_string().rfind("test.toml:3:15: ", 0), 0u) << errors[0].to_string();
}

TEST(ConfigErrors, UnknownKeyInNestedTableSuggestsNearest) {
  const auto errors = errors_of("model.path = \"m\"\n[sampler.defaults]\n  tpo_k = 5\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].to_string(),
            "test.toml:3:3: unknown key `tpo_k` in [sampler.defaults], did you mean `top_k`?");
}

TEST(ConfigErrors, UnknownSectionSuggestsNearest) {
  const auto errors = errors_of("model.path = \"m\"\n[kv_cahce]\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].to_string(),
            "test.toml:2:2: unknown key `kv_cahce`, did you mean `kv_cache`?");
}

TEST(ConfigErrors, UnknownKeyFarFromEverythingHasNoSuggestion) {
  const auto errors = errors_of("model.path = \"m\"\n[executor]\nbanana = 1\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].message, "unknown key `banana` in [executor]");
}

TEST(ConfigErrors, WrongTypeNamesExpectedType) {
  const auto errors = errors_of("model.path = \"m\"\nscheduler.prefix_cache = \"yes\"\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].to_string(),
            "test.toml:2:26: `scheduler.prefix_cache` must be a boolean (true or false), got a "
            "string");
}

TEST(ConfigErrors, SectionThatIsNotATable) {
  const auto errors = errors_of("model.path = \"m\"\nsampler = 3\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].message, "`sampler` must be a table, got an integer");
}

TEST(ConfigErrors, OutOfRangeNamesTheRange) {
  const auto errors = errors_of("model.path = \"m\"\n[sampler.defaults]\ntop_p = 0.0\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].to_string(),
            "test.toml:3:9: `sampler.defaults.top_p` = 0 is out of range (0.0, 1.0]");
}

TEST(ConfigErrors, MissingRequiredKeyPointsAtItsTable) {
  const auto errors = errors_of("\n\n[model]\nmax_context = 100\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].where.line, 3);
  EXPECT_EQ(errors[0].message.rfind("missing required key `path` in [model]", 0), 0u)
      << errors[0].message;
}

TEST(ConfigErrors, BadEnumValueListsChoices) {
  const auto errors =
      errors_of("model.path = \"m\"\ngeneration.repetition_guard.mode = \"halt\"\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].message,
            "`generation.repetition_guard.mode` must be one of \"off\" | \"warn\" | \"stop\", got "
            "\"halt\"");
}

TEST(ConfigErrors, EmptyStringIsRefused) {
  const auto errors = errors_of("model.path = \"\"\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].message, "`model.path` must not be empty");
}

TEST(ConfigErrors, ControlBytesInKeysAreEscaped) {
  const auto errors = errors_of("model.path = \"m\"\n\"a\\u0007b`\" = 1\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].message, "unknown key `a\\x07b\\x60`");
}

TEST(ConfigErrors, QuotedDottedKeyIsNotATablePath) {
  const auto errors = errors_of("model.path = \"m\"\n\"kv_cache.options\" = { a = 1 }\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].message.rfind("unknown key `kv_cache.options`", 0), 0u);
}

TEST(ConfigErrors, WhatJoinsEveryDiagnostic) {
  try {
    load_config_string("[executor]\ndevice = \"tpu\"\nthreads = -1\n", "x.toml");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    ASSERT_EQ(e.diagnostics().size(), 3u);  // path missing, device, threads
    EXPECT_EQ(std::string(e.what()).find("x.toml:1:1: missing required key `path`"), 0u);
    EXPECT_NE(std::string(e.what()).find("\nx.toml:2:10: `executor.device`"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("\nx.toml:3:11: `executor.threads` = -1"),
              std::string::npos);
  }
}

// toml++ 3.3 has undefined behaviour on some non-ASCII code points where it expects syntax
// (upstream #190/#295); the loader refuses those texts first. `0'` is one bad number to toml++.
TEST(ConfigErrors, NonAsciiWhereTomlExpectsSyntaxIsRefusedFirst) {
  const auto errors = errors_of("model.path = \"m\"\nm=0'\xef\xba\xbf\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].to_string().rfind("test.toml:2:5: non-ASCII character outside a string", 0),
            0u)
      << errors[0].to_string();
  const auto escape = errors_of("model.path = \"m\"\ns = \"\"\"\\\xc3\xa9\"\"\"\n");
  ASSERT_EQ(escape.size(), 1u);
  EXPECT_EQ(escape[0].message, "non-ASCII character after a backslash is not an escape sequence");
}

TEST(ConfigErrors, NonAsciiInStringsAndCommentsIsFine) {
  const Config c = load_config_string(
      "\xef\xbb\xbf# caf\xc3\xa9\n"
      "model.path = \"mod\xc3\xa8les\" # \xc2\xa7\n"
      "[kv_cache.options]\n"
      "multi = \"\"\"\n\xce\xb1\\\n  b\"\"\"\n"
      "literal = '''\xce\xb2'''\n"
      "\"k\xc3\xa9y\" = [ \"\xc3\xa9\", # \xc3\xa9\n '\xc3\xa9' ]\n");
  EXPECT_EQ(c.model.path, "mod\xc3\xa8les");
  EXPECT_EQ(
      json::parse(c.kv_cache.options_json),
      json::parse("{\"multi\": \"\xce\xb1"
                  "b\", \"literal\": \"\xce\xb2\", \"k\xc3\xa9y\": [\"\xc3\xa9\", \"\xc3\xa9\"]}"));
}

TEST(ConfigErrors, UnreadableFileIsAnError) {
  EXPECT_THROW(load_config_file(kSourceDir / "configs/no-such-file.toml"), Error);
}

// ---------------------------------------------------------------- invalid example files

// Each file under tests/data/config/invalid states its diagnostics on `# expect: L:C: text`
// lines; the loader must produce exactly those (each a prefix of one diagnostic), no more.
class InvalidConfigFile : public testing::TestWithParam<std::string> {};

TEST_P(InvalidConfigFile, ReportsExactlyTheExpectedDiagnostics) {
  const fs::path path = kInvalidDir / GetParam();
  std::vector<std::string> expected;
  std::istringstream lines(read_text(path));
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("# expect: ", 0) == 0) expected.push_back(path.string() + ":" + line.substr(10));
  ASSERT_FALSE(expected.empty()) << path << " has no `# expect:` line";
  try {
    load_config_file(path);
    FAIL() << path << " loaded without error";
  } catch (const ConfigError& e) {
    std::vector<std::string> got;
    for (const auto& d : e.diagnostics()) got.push_back(d.to_string());
    ASSERT_EQ(got.size(), expected.size()) << e.what();
    for (std::size_t i = 0; i < got.size(); ++i)
      EXPECT_EQ(got[i].rfind(expected[i], 0), 0u)
          << "expected: " << expected[i] << "\ngot:      " << got[i];
  }
}

std::vector<std::string> invalid_files() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(kInvalidDir))
    if (entry.path().extension() == ".toml") names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

INSTANTIATE_TEST_SUITE_P(Examples, InvalidConfigFile, testing::ValuesIn(invalid_files()),
                         [](const auto& info) {
                           std::string name = fs::path(info.param).stem().string();
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// ---------------------------------------------------------------- defaults

TEST(ConfigDefaults, AppliedWhenOnlyTheModelPathIsGiven) {
  const Config c = load_config_string("[model]\npath = \"m\"\n");
  EXPECT_EQ(c.model.path, "m");
  EXPECT_EQ(c.model.max_context, 8192);
  EXPECT_EQ(c.model.dtype, "auto");
  EXPECT_EQ(c.executor.device, "cpu");
  EXPECT_EQ(c.executor.tensor_parallel, 1);
  EXPECT_EQ(c.kv_cache.plugin, "bf16");
  EXPECT_EQ(c.kv_cache.page_size, 64);
  EXPECT_DOUBLE_EQ(c.kv_cache.memory_gib, 2.0);
  EXPECT_EQ(c.kv_cache.options_json, "{}");
  EXPECT_EQ(c.attention.plugin, "reference");
  EXPECT_EQ(c.sampler.plugin, "standard");
  EXPECT_DOUBLE_EQ(c.sampler.defaults.temperature, 1.0);
  EXPECT_DOUBLE_EQ(c.sampler.defaults.top_p, 1.0);
  EXPECT_EQ(c.sampler.defaults.top_k, 0);
  EXPECT_DOUBLE_EQ(c.sampler.defaults.repetition_penalty, 1.0);
  EXPECT_EQ(c.sampler.defaults.max_tokens, 4096);
  EXPECT_EQ(c.sampler.defaults.seed, -1);
  EXPECT_TRUE(c.frontends.empty());
  EXPECT_TRUE(c.scheduler.prefix_cache);
  EXPECT_EQ(c.scheduler.chunked_prefill_size, 2048);
  EXPECT_EQ(c.limits.max_body_bytes, 8 << 20);
  EXPECT_EQ(c.generation.repetition_guard.mode, "stop");
  EXPECT_TRUE(c.plugins.search_path.empty());
  EXPECT_EQ(c.log.level, "info");
}

// Writing every key with the default the schema documents must load, and give default_config():
// the docs' default column is valid TOML and means what the loader applies.
TEST(ConfigDefaults, DocumentedDefaultsRoundTrip) {
  std::string text = "model.path = \"m\"\n";
  for (const auto& key : config_schema::keys())
    if (!key.required()) text += key.dotted_path() + " = " + key.default_text() + "\n";
  const Config loaded = load_config_string(text);
  Config expected = default_config();
  for (const auto& key : config_schema::keys()) {
    if (key.required()) continue;
    Config a = loaded, b = expected;
    std::visit([&](auto field) { EXPECT_EQ(field(a), field(b)) << key.dotted_path(); }, key.field);
  }
}

// A lowered limit drags the defaults below it along; a value the file wrote is never changed.
TEST(ConfigDefaults, DefaultsFollowALoweredLimit) {
  const Config c = load_config_string("model.path = \"m\"\nmodel.max_context = 100\n");
  EXPECT_EQ(c.limits.max_tokens, 100);
  EXPECT_EQ(c.sampler.defaults.max_tokens, 100);
  const Config s = load_config_string("model.path = \"m\"\nscheduler.max_batched_tokens = 32\n");
  EXPECT_EQ(s.scheduler.max_running_sequences, 32);
  EXPECT_EQ(s.scheduler.chunked_prefill_size, 32);
  const auto errors = errors_of(
      "model.path = \"m\"\nscheduler.max_batched_tokens = 32\nscheduler.chunked_prefill_size = "
      "64\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].to_string(),
            "test.toml:3:11: `scheduler.chunked_prefill_size` = 64 must not exceed "
            "`scheduler.max_batched_tokens` = 32");
}

TEST(ConfigDefaults, IntegerIsAcceptedForFloatKeys) {
  const Config c = load_config_string("model.path = \"m\"\nsampler.defaults.temperature = 1\n");
  EXPECT_DOUBLE_EQ(c.sampler.defaults.temperature, 1.0);
}

// ---------------------------------------------------------------- plugin options

TEST(ConfigPluginOptions, TablesBecomeJsonAndFrontendsKeepTheirKeys) {
  const Config c = load_config_string(R"(model.path = "m"
[kv_cache.options]
storage = "fp32"
nested = { list = [1, 2.5, true], name = "x" }
[[frontend]]
plugin = "http"
listen = "127.0.0.1:8000"
[[frontend]]
plugin = "grpc"
)",
                                      "opts.toml");
  EXPECT_EQ(json::parse(c.kv_cache.options_json),
            json::parse(R"({"storage":"fp32","nested":{"list":[1,2.5,true],"name":"x"}})"));
  EXPECT_EQ(c.attention.options_json, "{}");
  ASSERT_EQ(c.frontends.size(), 2u);
  EXPECT_EQ(json::parse(c.frontends[0].options_json),
            json::parse(R"({"listen":"127.0.0.1:8000"})"));
  EXPECT_EQ(c.frontends[1].options_json, "{}");

  const auto uses = c.plugin_uses();
  ASSERT_EQ(uses.size(), 5u);
  EXPECT_EQ(uses[0].kind, TS_KIND_KV_CACHE);
  EXPECT_EQ(uses[0].options_location.to_string(), "opts.toml:2:1");
  EXPECT_EQ(uses[0].name_location.to_string(), "opts.toml:2:1");  // defaulted: its table
  EXPECT_EQ(uses[1].name_location.to_string(), "opts.toml:1:1");  // no [attention] at all
  EXPECT_EQ(uses[4].kind, TS_KIND_FRONTEND);
  EXPECT_EQ(uses[4].name, "grpc");
  EXPECT_EQ(uses[4].section, "[[frontend]] entry 2");
  EXPECT_EQ(uses[4].name_location.to_string(), "opts.toml:9:1");
}

// ---------------------------------------------------------------- shipped files and docs

TEST(ConfigFiles, EveryFileInConfigsLoads) {
  int count = 0;
  for (const auto& entry : fs::directory_iterator(kSourceDir / "configs")) {
    if (entry.path().extension() != ".toml") continue;
    SCOPED_TRACE(entry.path().string());
    EXPECT_NO_THROW(load_config_file(entry.path()));
    ++count;
  }
  EXPECT_GE(count, 2);
}

TEST(ConfigFiles, TinyCpuSaysWhatItsCommentsSay) {
  const Config c = load_config_file(kSourceDir / "configs/tiny-cpu.toml");
  EXPECT_EQ(c.model.path, "models/tiny-dsv4");
  EXPECT_EQ(c.executor.device, "cpu");
  EXPECT_EQ(c.kv_cache.plugin, "bf16");
  EXPECT_EQ(c.attention.plugin, "reference");
  EXPECT_DOUBLE_EQ(c.sampler.defaults.temperature, 0.6);
  EXPECT_DOUBLE_EQ(c.sampler.defaults.top_p, 0.95);
  ASSERT_EQ(c.frontends.size(), 2u);
  EXPECT_EQ(c.frontends[0].plugin, "http");
  EXPECT_EQ(json::parse(c.frontends[0].options_json)["listen"], "127.0.0.1:8000");
  EXPECT_EQ(c.frontends[1].plugin, "grpc");
  EXPECT_EQ(json::parse(c.frontends[1].options_json)["listen"], "127.0.0.1:50051");
  const Config fp8 = load_config_file(kSourceDir / "configs/tiny-cpu-fp8.toml");
  EXPECT_EQ(fp8.kv_cache.plugin, "fp8");
  const Config ab = load_config_file(kSourceDir / "configs/tiny-cpu-ab.toml");
  ASSERT_EQ(ab.ab.arms.size(), 2u);
  EXPECT_EQ(ab.ab.arms[0].kv_cache.plugin, "bf16");
  EXPECT_EQ(ab.ab.arms[1].kv_cache.plugin, "fp8");
  EXPECT_EQ(ab.ab.arms[1].kv_cache.memory_gib, 0.5);
}

TEST(ConfigDocs, ReferenceInDocsMatchesTheSchema) {
  const std::string docs = read_text(kSourceDir / "docs/config.md");
  const std::string begin = "<!-- BEGIN GENERATED: tessera config docs -->\n";
  const std::string end = "<!-- END GENERATED -->";
  const auto b = docs.find(begin), e = docs.find(end);
  ASSERT_NE(b, std::string::npos);
  ASSERT_NE(e, std::string::npos);
  EXPECT_EQ(docs.substr(b + begin.size(), e - b - begin.size()),
            config_schema::render_config_reference())
      << "docs/config.md is stale: replace the generated block with `tessera config docs`";
}

// ---------------------------------------------------------------- tessera config check

// Runs `tessera config check FILE` in-process; returns the exit code and stderr.
std::pair<int, std::string> run_config_check(const fs::path& file, std::string* out = nullptr) {
  CLI::App app;
  cli::add_config_command(app);
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  int code = 0;
  try {
    app.parse(std::vector<std::string>{file.string(), "check", "config"});  // reversed argv
  } catch (const CLI::ParseError& e) {
    code = e.get_exit_code();
  }
  const std::string stdout_text = testing::internal::GetCapturedStdout();
  if (out) *out = stdout_text;
  return {code, testing::internal::GetCapturedStderr()};
}

fs::path write_temp(const std::string& name, const std::string& text) {
  const fs::path path = fs::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path;
}

TEST(ConfigCheckCommand, ReportsFileErrorsAndFails) {
  const auto [code, err] = run_config_check(kInvalidDir / "unknown_nested_key.toml");
  EXPECT_EQ(code, 1);
  EXPECT_NE(err.find("unknown_nested_key.toml:7:1: unknown key `temprature`"), std::string::npos)
      << err;
}

TEST(ConfigCheckCommand, UnknownPluginIsReportedAtItsKey) {
  const std::string text = "model.path = \"m\"\nplugins.search_path = [\"" +
                           std::string(TESSERA_PLUGIN_DIR) +
                           "\"]\n[attention]\nplugin = \"no_such_backend\"\n";
  const fs::path file = write_temp("tessera_config_test_unknown_plugin.toml", text);
  const auto [code, err] = run_config_check(file);
  EXPECT_EQ(code, 1);
  EXPECT_NE(err.find(file.string() + ":4:1: [attention]: "), std::string::npos) << err;
  EXPECT_NE(err.find("no_such_backend"), std::string::npos) << err;
}

// Real in-tree plugins: a valid choice passes, an option their schema lacks is refused.
TEST(ConfigCheckCommand, ValidatesPluginOptionsWithTheirSchemas) {
  const std::string head =
      "model.path = \"m\"\nplugins.search_path = [\"" + std::string(TESSERA_PLUGIN_DIR) + "\"]\n";
  const fs::path good = write_temp("tessera_config_test_good.toml", head);
  std::string out;
  const auto [code, err] = run_config_check(good, &out);
  EXPECT_EQ(code, 0) << err;
  EXPECT_EQ(out, good.string() + ": ok\n");

  const fs::path bad = write_temp("tessera_config_test_bad_option.toml",
                                  head + "[kv_cache.options]\nno_such_option = 1\n");
  const auto [bad_code, bad_err] = run_config_check(bad);
  EXPECT_EQ(bad_code, 1);
  EXPECT_NE(bad_err.find(bad.string() + ":3:1: [kv_cache] options of plugin `bf16`: "),
            std::string::npos)
      << bad_err;
  EXPECT_NE(bad_err.find("no_such_option"), std::string::npos) << bad_err;
}

// The shipped files name real plugins (bf16/fp8, reference, standard, http): all must be built
// and accept the options the files give them.
TEST(ConfigCheckCommand, ShippedConfigsPassWithTheInTreePlugins) {
  ASSERT_EQ(setenv("TESSERA_PLUGIN_PATH", TESSERA_PLUGIN_DIR, 1), 0);
  for (const auto& entry : fs::directory_iterator(kSourceDir / "configs")) {
    if (entry.path().extension() != ".toml") continue;
    std::string out;
    const auto [code, err] = run_config_check(entry.path(), &out);
    EXPECT_EQ(code, 0) << err;
    EXPECT_EQ(out, entry.path().string() + ": ok\n");
  }
  unsetenv("TESSERA_PLUGIN_PATH");
}

}  // namespace
}  // namespace tessera
