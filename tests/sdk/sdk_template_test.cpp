// The out-of-tree template plugin, built against an installed SDK by the
// sdk_install_and_build_template fixture, loaded through the registry and run.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "plugins/registry.hpp"

namespace {

constexpr ts_device kCpu = {TS_DEVICE_CPU, 0, nullptr};

class TemplatePlugin : public ::testing::Test {
 protected:
  TemplatePlugin() : plugin(registry.load(TESSERA_SDK_TEMPLATE_PLUGIN)) {}

  // Samples one row; returns the result and the status.
  ts_status sample(const tessera::PluginInstance& instance, const std::vector<float>& logits,
                   ts_sampler_result& result, int32_t top_logprobs = 0) {
    ts_sampler_row row{};
    row.logits = logits.data();
    row.params.logprobs = 1;
    row.params.top_logprobs = top_logprobs;
    result.top_capacity = static_cast<int32_t>(top_tokens.size());
    result.top_tokens = top_tokens.data();
    result.top_logprobs = top_values.data();
    return instance.table<ts_sampler_table>().sample(instance.get(), &row, 1,
                                                     static_cast<int32_t>(logits.size()), &result);
  }

  tessera::PluginRegistry registry;
  const tessera::LoadedPlugin& plugin;
  std::vector<int32_t> top_tokens = std::vector<int32_t>(4);
  std::vector<float> top_values = std::vector<float>(4);
};

TEST_F(TemplatePlugin, IsASamplerWithItsOwnSchema) {
  EXPECT_EQ(plugin.kind(), TS_KIND_SAMPLER);
  EXPECT_EQ(plugin.name(), "token_bias");
  EXPECT_EQ(plugin.version(), "1.0.0");
  EXPECT_TRUE(plugin.options_schema->document()["properties"].contains("tokens"));
}

TEST_F(TemplatePlugin, BiasMovesTheArgmaxAndLogprobsStayRaw) {
  const std::vector<float> logits = {0.5f, 4.0f, 1.0f, 2.0f};
  ts_sampler_result result{};
  tessera::PluginInstance plain = registry.create(plugin, "", kCpu);
  ASSERT_EQ(sample(plain, logits, result).code, TS_OK);
  EXPECT_EQ(result.token, 1);

  tessera::PluginInstance biased = registry.create(plugin, R"({"bias": 2.5, "tokens": [3]})", kCpu);
  ASSERT_EQ(sample(biased, logits, result, 2).code, TS_OK);
  EXPECT_EQ(result.token, 3);  // 2.0 + 2.5 > 4.0
  double norm = 0.0;
  for (float l : logits) norm += std::exp(static_cast<double>(l));
  EXPECT_NEAR(result.logprob, 2.0 - std::log(norm), 1e-5);
  ASSERT_EQ(result.n_top, 2);
  EXPECT_EQ(top_tokens[0], 1);
  EXPECT_EQ(top_tokens[1], 3);
  EXPECT_NEAR(top_values[0], 4.0 - std::log(norm), 1e-5);
}

TEST_F(TemplatePlugin, HostRefusesBadOptionsBeforeThePluginSeesThem) {
  try {
    (void)registry.create(plugin, R"({"tokens": [-1], "bais": 1})", kCpu);
    FAIL() << "expected a refusal";
  } catch (const tessera::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("options.tokens[0]: -1 is below the minimum 0"), std::string::npos) << what;
    EXPECT_NE(what.find("unknown key `bais`, did you mean `bias`?"), std::string::npos) << what;
  }
}

TEST_F(TemplatePlugin, NonFiniteLogitIsANumericErrorNamingTheRow) {
  tessera::PluginInstance instance = registry.create(plugin, "{}", kCpu);
  ts_sampler_result result{};
  const ts_status status =
      sample(instance, {0.0f, std::numeric_limits<float>::quiet_NaN()}, result);
  EXPECT_EQ(status.code, TS_ERR_NUMERIC);
  EXPECT_STREQ(status.message, "row 0: logit of token 1 is not finite");
}

TEST_F(TemplatePlugin, RefusesCudaThroughCheckSupport) {
  try {
    (void)registry.create(plugin, "{}", ts_device{TS_DEVICE_CUDA, 0, nullptr});
    FAIL() << "expected a refusal";
  } catch (const tessera::Error& e) {
    EXPECT_NE(std::string(e.what()).find("CPU only [TS_ERR_UNSUPPORTED]"), std::string::npos)
        << e.what();
  }
}

}  // namespace
