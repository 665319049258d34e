// Test plugin "scripted" (kind sampler) for the end-to-end tests: a request whose seed is s
// (0 <= s < number of scripts) receives scripts[s] token by token — draw i is scripts[s][i], and
// end_token once the script is spent — whatever the model's logits say. Any other seed gets the
// argmax. Everything else on the path (HTTP, the engine table, chat parsing, the engine, the
// model forward, the tokenizer) is the real thing; only the choice of token is fixed, so a test
// can make a random-weight model "answer" with reasoning, content and DSML tool calls.
// logprob / top_logprobs are the real log-softmax of the logits.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "tessera/plugin_abi.h"
#include "tessera/plugin_sdk.hpp"

namespace {

using tessera::sdk::fail;
using tessera::sdk::guarded;
using tessera::sdk::ok;

constexpr const char* kSchema = R"json({
  "type": "object", "additionalProperties": false,
  "properties": {
    "scripts": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}},
                "default": []},
    "end_token": {"type": "integer", "minimum": 0, "default": 1}
  }
})json";

struct Scripted {
  std::vector<std::vector<int32_t>> scripts;
  int32_t end_token = 1;
};

ts_status parse(const char* options_json, Scripted& out) {
  const auto j = nlohmann::json::parse(options_json ? options_json : "{}", nullptr, false);
  if (!j.is_object()) return fail(TS_ERR_INVALID_ARGUMENT, "options must be an object");
  out.scripts = j.value("scripts", std::vector<std::vector<int32_t>>{});
  out.end_token = j.value("end_token", 1);
  return ok();
}

ts_status check_support(const char* options_json, ts_device device) {
  return guarded([&] {
    Scripted s;
    if (device.type != TS_DEVICE_CPU) return fail(TS_ERR_UNSUPPORTED, "CPU only");
    return parse(options_json, s);
  });
}

ts_status create(const ts_host_api*, const char* options_json, ts_device, ts_instance** out) {
  return guarded([&] {
    Scripted s;
    if (ts_status st = parse(options_json, s); st.code != TS_OK) return st;
    return tessera::sdk::create_instance<Scripted>(out, std::move(s));
  });
}

void destroy(ts_instance* instance) { tessera::sdk::destroy_instance<Scripted>(instance); }

ts_status sample(ts_instance* self, const ts_sampler_row* rows, int32_t n_rows, int32_t vocab,
                 ts_sampler_result* results) {
  return guarded([&] {
    const Scripted& s = tessera::sdk::self<Scripted>(self);
    for (int32_t r = 0; r < n_rows; ++r) {
      const ts_sampler_row& row = rows[r];
      const float* logits = row.logits;
      const float max_logit = *std::max_element(logits, logits + vocab);
      double sum = 0;
      for (int32_t v = 0; v < vocab; ++v)
        sum += std::exp(static_cast<double>(logits[v] - max_logit));
      const double log_z = max_logit + std::log(sum);
      int32_t token = static_cast<int32_t>(std::max_element(logits, logits + vocab) - logits);
      if (row.params.seed < s.scripts.size()) {
        const auto& script = s.scripts[row.params.seed];
        token = row.rng_counter < script.size() ? script[row.rng_counter] : s.end_token;
      }
      if (token < 0 || token >= vocab)
        return fail(TS_ERR_INVALID_ARGUMENT, "script token outside the vocabulary");
      ts_sampler_result& out = results[r];
      out.token = token;
      out.logprob = static_cast<float>(logits[token] - log_z);
      out.n_top = 0;
      const int32_t k = std::min({row.params.top_logprobs, out.top_capacity, vocab});
      if (k > 0 && out.top_tokens != nullptr && out.top_logprobs != nullptr) {
        std::vector<int32_t> order(static_cast<std::size_t>(vocab));
        std::iota(order.begin(), order.end(), 0);
        std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t b) {
          return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
        });
        for (int32_t i = 0; i < k; ++i) {
          out.top_tokens[i] = order[static_cast<std::size_t>(i)];
          out.top_logprobs[i] =
              static_cast<float>(logits[order[static_cast<std::size_t>(i)]] - log_z);
        }
        out.n_top = k;
      }
    }
    return ok();
  });
}

constexpr ts_sampler_table kTable{.struct_size = sizeof(ts_sampler_table), .sample = &sample};

constexpr ts_plugin_descriptor kDescriptor{
    .struct_size = sizeof(ts_plugin_descriptor),
    .abi_major = TS_ABI_MAJOR,
    .abi_minor = TS_ABI_MINOR,
    .kind = TS_KIND_SAMPLER,
    .name = "scripted",
    .version = "0.1.0",
    .build_info_json = R"({"compiler":"test","cuda":"none","sm":[]})",
    .options_schema_json = kSchema,
    .capabilities_json = R"({"devices":["cpu"],"test_only":true})",
    .check_support = &check_support,
    .create = &create,
    .destroy = &destroy,
    .functions = &kTable,
};

}  // namespace

TESSERA_DEFINE_PLUGIN(kDescriptor)
