// What frontends hand the engine table (the HTTP frontend's engine requests, the gRPC bridge's,
// apply_chat_template) is parsed with tessera/bounded_json.hpp too: an object of 100,000 keys is
// refused naming the bound, quickly (ordered_json::parse took ~7 s for it), and never rendered.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "serve/serving_api.hpp"
#include "tokenizer/tokenizer.hpp"

namespace tessera::serve {
namespace {

std::string hundred_thousand_keys() {
  std::string keys = "{";
  for (int i = 0; i < 100000; ++i) {
    keys += (i == 0 ? "\"k" : ",\"k") + std::to_string(i) + "\":0";
  }
  return keys + "}";
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

TEST(ServeBoundedParse, TheEngineTableRefusesHugeObjectsQuickly) {
  ServingInfo info;
  info.model_name = "tiny";
  info.limits.max_context = 4096;
  auto tokenizer = std::make_shared<const tokenizer::Tokenizer>(tokenizer::Tokenizer::from_file(
      std::string(TESSERA_SOURCE_DIR) + "/models/tiny-dsv4/tokenizer.json"));
  ServingApi api(info, tokenizer);
  const ts_engine_api* table = api.table();
  const std::string request = R"({"messages": [{"role": "user", "content": "hi"}], "metadata": )" +
                              hundred_thousand_keys() + "}";

  auto start = std::chrono::steady_clock::now();
  char text[256];
  int64_t n = 0;
  const ts_status templated =
      table->apply_chat_template(table->ctx, request.c_str(), text, sizeof text, &n);
  const double template_ms = ms_since(start);
  EXPECT_EQ(templated.code, TS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(templated.message ? templated.message : "").find("max_object_keys"),
            std::string::npos);
  EXPECT_LT(template_ms, 100.0);

  start = std::chrono::steady_clock::now();
  uint64_t id = 0;
  const ts_status submitted = table->submit(
      table->ctx, request.c_str(), [](void*, const char*) noexcept {}, nullptr, &id);
  const double submit_ms = ms_since(start);
  EXPECT_EQ(submitted.code, TS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(submitted.message ? submitted.message : "").find("max_object_keys"),
            std::string::npos);
  EXPECT_LT(submit_ms, 100.0);
}

}  // namespace
}  // namespace tessera::serve
