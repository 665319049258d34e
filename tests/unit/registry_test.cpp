// The plugin registry against real shared objects built by tests/plugins: each broken plugin is
// refused with its path, the reason and the fix; good ones load, validate options, create, log
// through the host table and run; a plugin's failures come back as errors, never as crashes.
#include "plugins/registry.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace {

namespace fs = std::filesystem;
using tessera::Error;
using tessera::PluginRegistry;

const fs::path kTestPlugins = TESSERA_TEST_PLUGIN_DIR;
constexpr ts_device kCpu = {TS_DEVICE_CPU, 0, nullptr};

// Runs f, which must throw tessera::Error; returns the message.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected tessera::Error";
  return "";
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

class RegistryTest : public ::testing::Test {
 protected:
  void SetUp() override { registry.discover({kTestPlugins}); }

  const PluginRegistry::Failure* failure_for(const std::string& file) const {
    for (const auto& f : registry.failures())
      if (f.path.filename() == file) return &f;
    return nullptr;
  }
  std::string reason_for(const std::string& file) const {
    const auto* f = failure_for(file);
    EXPECT_NE(f, nullptr) << file << " was not refused";
    return f ? f->reason : "";
  }

  PluginRegistry registry;
};

TEST_F(RegistryTest, GoodPluginsLoadAndEveryBrokenOneIsRecorded) {
  std::vector<std::string> names;
  for (const auto& p : registry.plugins()) names.emplace_back(p.name());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"test_create_fails", "test_kv", "test_sampler",
                                             "test_throws", "test_unguarded"}));
  std::vector<std::string> refused;
  for (const auto& f : registry.failures()) refused.push_back(f.path.filename().string());
  std::sort(refused.begin(), refused.end());
  EXPECT_EQ(refused, (std::vector<std::string>{"libtest_abi_major.so", "libtest_abi_minor.so",
                                               "libtest_bad_schema.so", "libtest_no_entry.so",
                                               "libtest_not_elf.so", "libtest_small_table.so"}));
  for (const auto& f : registry.failures()) {
    EXPECT_TRUE(f.path.is_absolute()) << f.path;
    EXPECT_CONTAINS(f.reason, "Fix:");
  }
}

TEST_F(RegistryTest, NotASharedObjectCarriesTheLoadersReason) {
  const std::string reason = reason_for("libtest_not_elf.so");
  EXPECT_CONTAINS(reason, "the dynamic loader refused it");
  EXPECT_CONTAINS(reason, "invalid ELF header");
}

TEST_F(RegistryTest, MissingEntrySymbolIsNamed) {
  EXPECT_CONTAINS(reason_for("libtest_no_entry.so"),
                  "exports no `tessera_plugin_entry` symbol, so it is not a Tessera plugin");
}

TEST_F(RegistryTest, AbiMajorMismatchGivesBothVersionsAndTheFix) {
  const std::string reason = reason_for("libtest_abi_major.so");
  EXPECT_CONTAINS(reason, fmt::format("plugin ABI {}.{} does not match host ABI {}.{}",
                                      TS_ABI_MAJOR + 1, TS_ABI_MINOR, TS_ABI_MAJOR, TS_ABI_MINOR));
  EXPECT_CONTAINS(reason, fmt::format("rebuild the plugin against Tessera SDK {}.x", TS_ABI_MAJOR));
  EXPECT_EQ(failure_for("libtest_abi_major.so")->name, "");  // layout unknown: name not read
}

TEST_F(RegistryTest, AbiMinorTooNewGivesBothVersionsAndTheFix) {
  const std::string reason = reason_for("libtest_abi_minor.so");
  EXPECT_CONTAINS(reason, fmt::format("plugin ABI {}.{} is newer than host ABI {}.{}", TS_ABI_MAJOR,
                                      TS_ABI_MINOR + 1, TS_ABI_MAJOR, TS_ABI_MINOR));
  EXPECT_CONTAINS(reason, "upgrade Tessera");
  EXPECT_EQ(failure_for("libtest_abi_minor.so")->name, "test_abi_minor");
}

TEST_F(RegistryTest, FunctionTableSmallerThanTheHostsIsRefused) {
  EXPECT_CONTAINS(reason_for("libtest_small_table.so"),
                  fmt::format("function table is 4 bytes but this host needs at least {} bytes "
                              "for the kind",
                              offsetof(ts_sampler_table, sample_scanned)));
}

TEST_F(RegistryTest, SchemaOutsideTheSubsetIsRefusedAtLoad) {
  EXPECT_CONTAINS(reason_for("libtest_bad_schema.so"),
                  "keyword `pattern` is outside the supported subset");
}

TEST_F(RegistryTest, ExplicitLoadThrowsWithThePath) {
  PluginRegistry fresh;
  const fs::path file = kTestPlugins / "libtest_abi_major.so";
  const std::string message = error_of([&] { (void)fresh.load(file); });
  EXPECT_CONTAINS(message, "cannot load plugin " + file.string() + ": plugin ABI");
  EXPECT_CONTAINS(error_of([&] { (void)fresh.load(kTestPlugins / "libnope.so"); }),
                  "libnope.so: no such file");
}

TEST_F(RegistryTest, LoadingTheSameFileTwiceGivesTheSamePlugin) {
  const auto& a = registry.load(kTestPlugins / "libtest_sampler.so");
  const auto& b = registry.load(kTestPlugins / "." / "libtest_sampler.so");
  EXPECT_EQ(&a, &b);
  EXPECT_EQ(registry.plugins().size(), 5u);
}

TEST_F(RegistryTest, SecondPluginWithTheSameNameIsRecordedNotLoaded) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("tessera_dup_{}", ::getpid());
  fs::create_directories(dir);
  fs::copy_file(kTestPlugins / "libtest_sampler.so", dir / "libtest_sampler_copy.so",
                fs::copy_options::overwrite_existing);
  registry.discover({dir});
  fs::remove_all(dir);
  const std::string reason = reason_for("libtest_sampler_copy.so");
  EXPECT_CONTAINS(reason, "another sampler plugin named `test_sampler` is already loaded from " +
                              fs::canonical(kTestPlugins / "libtest_sampler.so").string());
  EXPECT_EQ(registry.plugins().size(), 5u);
}

TEST_F(RegistryTest, WrongKindForTheSlotNamesTheActualKind) {
  const std::string message = error_of([&] { (void)registry.find(TS_KIND_SAMPLER, "test_kv"); });
  EXPECT_CONTAINS(message, "plugin `test_kv` (");
  EXPECT_CONTAINS(message, "is a kv_cache plugin, not a sampler plugin");
  EXPECT_CONTAINS(message, "Available sampler plugins: ");
  EXPECT_CONTAINS(message, "test_sampler");
  EXPECT_EQ(registry.find(TS_KIND_KV_CACHE, "test_kv").name(), "test_kv");
}

TEST_F(RegistryTest, UnknownNameSuggestsTheNearestAndListsSearchedDirectories) {
  const std::string message =
      error_of([&] { (void)registry.find(TS_KIND_SAMPLER, "test_sampelr"); });
  EXPECT_CONTAINS(message, "no sampler plugin named `test_sampelr` (did you mean `test_sampler`?)");
  EXPECT_CONTAINS(message, "Searched: " + kTestPlugins.string());
}

TEST_F(RegistryTest, AskingForARefusedPluginExplainsTheRefusal) {
  const std::string message =
      error_of([&] { (void)registry.find(TS_KIND_SAMPLER, "test_abi_minor"); });
  EXPECT_CONTAINS(message, "libtest_abi_minor.so was refused: plugin ABI");
}

TEST_F(RegistryTest, InvalidOptionsNameTheKeyAndTheExpectation) {
  const auto& plugin = registry.find(TS_KIND_SAMPLER, "test_sampler");
  std::string message =
      error_of([&] { (void)registry.create(plugin, R"({"bais": 3, "token": "two"})", kCpu); });
  EXPECT_CONTAINS(message, "invalid options for sampler plugin `test_sampler`");
  EXPECT_CONTAINS(message, "options.bais: unknown key `bais`, did you mean `bias`?");
  EXPECT_CONTAINS(message, R"(options.token: expected integer, got string "two")");
  message = error_of([&] { registry.validate_options(plugin, R"({"bias": 500})"); });
  EXPECT_CONTAINS(message, "options.bias: 500 is above the maximum 100");
  message = error_of([&] { registry.validate_options(plugin, "{bias: 1}"); });
  EXPECT_CONTAINS(message, "options for sampler plugin `test_sampler` are not valid JSON");
  EXPECT_NO_THROW(registry.validate_options(plugin, ""));
}

TEST_F(RegistryTest, CreatedInstanceGetsDefaultsLogsWithItsNameAndSamples) {
  std::ostringstream log_text;
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>(
      "capture", std::make_shared<spdlog::sinks::ostream_sink_st>(log_text)));
  const auto& plugin = registry.find(TS_KIND_SAMPLER, "test_sampler");
  tessera::PluginInstance biased = registry.create(plugin, R"({"bias": 10, "token": 2})", kCpu);
  tessera::PluginInstance plain = registry.create(plugin, "", kCpu);
  spdlog::set_default_logger(previous);

  EXPECT_CONTAINS(log_text.str(), "[test_sampler] received options: ");
  EXPECT_CONTAINS(log_text.str(), R"("label":"plain")");  // default filled in by the host
  const float logits[4] = {1.0f, 5.0f, 0.0f, 3.0f};
  ts_sampler_row row{};
  row.logits = logits;
  ts_sampler_result result{};
  const auto& table = biased.table<ts_sampler_table>();
  biased.check(table.sample(biased.get(), &row, 1, 4, &result), "sample");
  EXPECT_EQ(result.token, 2);  // 0 + 10 beats 5
  plain.check(table.sample(plain.get(), &row, 1, 4, &result), "sample");
  EXPECT_EQ(result.token, 1);
}

TEST_F(RegistryTest, CheckSupportRefusalCarriesThePluginsMessage) {
  const auto& plugin = registry.find(TS_KIND_SAMPLER, "test_sampler");
  const std::string message = error_of([&] {
    (void)registry.create(plugin, "{}", ts_device{TS_DEVICE_CUDA, 0, nullptr});
  });
  EXPECT_CONTAINS(message,
                  "cannot run on cuda:0 with these options: test_sampler runs on CPU only "
                  "[TS_ERR_UNSUPPORTED]");
}

TEST_F(RegistryTest, CreateFailureCarriesThePluginsOwnMessage) {
  const auto& plugin = registry.find(TS_KIND_SAMPLER, "test_create_fails");
  const std::string message = error_of([&] { (void)registry.create(plugin, "{}", kCpu); });
  EXPECT_CONTAINS(message, "sampler plugin `test_create_fails` (" + plugin.path.string() +
                               ") failed to create an instance on cpu: needs 64 GiB of pinned "
                               "host memory, only 2 GiB are free [TS_ERR_OUT_OF_MEMORY]");
}

TEST_F(RegistryTest, ExceptionInsideACallIsCaughtByTheSdkGuard) {
  const auto& plugin = registry.find(TS_KIND_SAMPLER, "test_throws");
  tessera::PluginInstance instance = registry.create(plugin, "{}", kCpu);
  const float logits[2] = {0.0f, 1.0f};
  ts_sampler_row row{};
  row.logits = logits;
  ts_sampler_result result{};
  const auto& table = instance.table<ts_sampler_table>();
  for (int attempt = 0; attempt < 2; ++attempt) {  // the plugin stays usable after a failure
    const ts_status status = table.sample(instance.get(), &row, 1, 2, &result);
    EXPECT_EQ(status.code, TS_ERR_INTERNAL);
    ASSERT_NE(status.message, nullptr);
    EXPECT_STREQ(status.message, "exception inside plugin: simulated bug: index 7 past the end");
    EXPECT_EQ(error_of([&] { instance.check(status, "sample"); }),
              "test_throws: sample: exception inside plugin: simulated bug: index 7 past the end "
              "[TS_ERR_INTERNAL]");
  }
}

TEST_F(RegistryTest, UnguardedThrowFromCreateBecomesAnErrorNotACrash) {
  const auto& plugin = registry.find(TS_KIND_SAMPLER, "test_unguarded");
  EXPECT_CONTAINS(error_of([&] { (void)registry.create(plugin, "{}", kCpu); }),
                  "let an exception cross the C boundary");
}

TEST(PluginKinds, NamesRoundTripAndTyposAreSuggested) {
  for (ts_plugin_kind k : {TS_KIND_ATTENTION, TS_KIND_KV_CACHE, TS_KIND_SAMPLER, TS_KIND_FRONTEND})
    EXPECT_EQ(tessera::parse_kind(tessera::kind_name(k)), k);
  EXPECT_CONTAINS(error_of([] { (void)tessera::parse_kind("samplr"); }),
                  "unknown plugin kind `samplr` (did you mean `sampler`?)");
}

TEST(PluginSearchPath, EnvironmentComesFirstThenTheExecutablesNeighbours) {
  ::setenv("TESSERA_PLUGIN_PATH", "/opt/a::/opt/b/", 1);
  const auto path = PluginRegistry::default_search_path();
  ::unsetenv("TESSERA_PLUGIN_PATH");
  ASSERT_GE(path.size(), 4u);
  EXPECT_EQ(path[0], fs::path("/opt/a"));
  EXPECT_EQ(path[1], fs::path("/opt/b/"));
  // This test binary lives in <build>/tests, so its neighbour directory is the test plugins'.
  EXPECT_EQ(fs::weakly_canonical(path[2]), fs::weakly_canonical(kTestPlugins));
  EXPECT_EQ(path.back(), fs::path(TESSERA_PLUGIN_INSTALL_DIR).lexically_normal());
}

}  // namespace
