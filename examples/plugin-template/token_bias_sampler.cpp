// token_bias: a greedy sampler that adds a fixed bias to the logits of chosen tokens before the
// argmax — e.g. to favour or ban a stop token. A template for third-party plugins: one static
// descriptor, every entry point wrapped in tessera::sdk::guarded, options read from the JSON the
// host has already validated against kOptionsSchema (with defaults filled in).
//
//   [sampler]
//   plugin = "token_bias"
//   [sampler.options]
//   bias = -100.0        # added to each listed token's logit
//   tokens = [1, 2]
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <tessera/plugin_sdk.hpp>
#include <unordered_set>
#include <vector>

namespace {

using tessera::sdk::fail;
using tessera::sdk::guarded;
using tessera::sdk::ok;

constexpr char kName[] = "token_bias";

constexpr char kOptionsSchema[] = R"({
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "bias": {"type": "number", "minimum": -1000, "maximum": 1000, "default": 0,
             "description": "added to the logit of every token in `tokens`"},
    "tokens": {"type": "array", "items": {"type": "integer", "minimum": 0}, "maxItems": 4096,
               "default": [], "description": "token ids that receive the bias"}
  }
})";

struct TokenBiasSampler {
  TokenBiasSampler(const ts_host_api* host, const nlohmann::json& options)
      : logger(host, kName), bias(options.at("bias").get<float>()) {
    for (const auto& t : options.at("tokens")) tokens.insert(t.get<int32_t>());
    logger.info("bias " + std::to_string(bias) + " on " + std::to_string(tokens.size()) +
                " token(s)");
  }
  tessera::sdk::Logger logger;
  float bias;
  std::unordered_set<int32_t> tokens;
};

// log_softmax(logits)[i] = logits[i] - max - log(sum(exp(logits - max))): stable for large logits.
double log_normalizer(const float* logits, int32_t vocab) {
  const float max = *std::max_element(logits, logits + vocab);
  double sum = 0.0;
  for (int32_t v = 0; v < vocab; ++v) sum += std::exp(static_cast<double>(logits[v]) - max);
  return max + std::log(sum);
}

ts_status sample_row(const TokenBiasSampler& s, const ts_sampler_row& row, int32_t index,
                     int32_t vocab, ts_sampler_result& result) {
  int32_t best = -1;
  float best_value = 0.0f;
  for (int32_t v = 0; v < vocab; ++v) {
    if (!std::isfinite(row.logits[v]))
      return fail(TS_ERR_NUMERIC, "row " + std::to_string(index) + ": logit of token " +
                                      std::to_string(v) + " is not finite");
    const float value = row.logits[v] + (s.tokens.count(v) != 0 ? s.bias : 0.0f);
    if (best < 0 || value > best_value) best = v, best_value = value;  // lowest id wins ties
  }
  result.token = best;
  result.n_top = 0;
  if (row.params.logprobs == 0 && row.params.top_logprobs == 0) return ok();
  // Logprobs describe the model's raw distribution, not the biased one (OpenAI's convention).
  const double norm = log_normalizer(row.logits, vocab);
  result.logprob = static_cast<float>(row.logits[best] - norm);
  const int32_t n = std::min({row.params.top_logprobs, result.top_capacity, vocab});
  if (n > 0) {
    std::vector<int32_t> ids(static_cast<size_t>(vocab));
    std::iota(ids.begin(), ids.end(), 0);
    std::partial_sort(ids.begin(), ids.begin() + n, ids.end(), [&](int32_t a, int32_t b) {
      return row.logits[a] != row.logits[b] ? row.logits[a] > row.logits[b] : a < b;
    });
    for (int32_t i = 0; i < n; ++i) {
      result.top_tokens[i] = ids[i];
      result.top_logprobs[i] = static_cast<float>(row.logits[ids[i]] - norm);
    }
    result.n_top = n;
  }
  return ok();
}

ts_status check_support(const char* /*options_json*/, ts_device device) {
  return guarded([&] {
    if (device.type != TS_DEVICE_CPU)
      return fail(TS_ERR_UNSUPPORTED, "token_bias reads logits in host memory: CPU only");
    return ok();
  });
}

ts_status create(const ts_host_api* host, const char* options_json, ts_device /*device*/,
                 ts_instance** out) {
  return guarded([&] {
    const auto options = nlohmann::json::parse(options_json ? options_json : "{}");
    return tessera::sdk::create_instance<TokenBiasSampler>(out, host, options);
  });
}

void destroy(ts_instance* instance) { tessera::sdk::destroy_instance<TokenBiasSampler>(instance); }

ts_status sample(ts_instance* self, const ts_sampler_row* rows, int32_t n_rows, int32_t vocab,
                 ts_sampler_result* results) {
  return guarded([&] {
    if (vocab <= 0 || n_rows < 0 || (n_rows > 0 && (rows == nullptr || results == nullptr)))
      return fail(TS_ERR_INVALID_ARGUMENT, "sample: empty vocabulary or null rows/results");
    const auto& s = tessera::sdk::self<TokenBiasSampler>(self);
    for (int32_t r = 0; r < n_rows; ++r) {
      const ts_status status = sample_row(s, rows[r], r, vocab, results[r]);
      if (status.code != TS_OK) return status;
    }
    return ok();
  });
}

constexpr ts_sampler_table kTable = {sizeof(ts_sampler_table), sample};

constexpr ts_plugin_descriptor kDescriptor = {
    sizeof(ts_plugin_descriptor),
    TS_ABI_MAJOR,
    TS_ABI_MINOR,
    TS_KIND_SAMPLER,
    kName,
    TOKEN_BIAS_VERSION,
    R"({"compiler": ")" __VERSION__ R"(", "cuda": null, "sm": []})",
    kOptionsSchema,
    R"({"devices": ["cpu"], "greedy_only": true, "logprobs": true})",
    check_support,
    create,
    destroy,
    &kTable,
};

}  // namespace

TESSERA_DEFINE_PLUGIN(kDescriptor)
