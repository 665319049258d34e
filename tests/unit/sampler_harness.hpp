// Test-side helpers for the "standard" sampler plugin: loads the real .so through
// tessera::PluginRegistry, builds rows, and computes the exact distribution the sampler must draw
// from with a deliberately plain reference (sort everything, normalise, cut) written
// independently of the plugin's code.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "plugins/registry.hpp"
#include "tessera/plugin_abi.h"
#include "util/plugin_instance.hpp"

namespace tessera::sampler_test {

inline constexpr ts_device kCpu{TS_DEVICE_CPU, 0, nullptr};

inline PluginRegistry& registry() {
  static PluginRegistry instance;
  return instance;
}

inline const LoadedPlugin& standard_plugin() {
  static const LoadedPlugin& plugin =
      registry().load(std::filesystem::path(TESSERA_PLUGIN_DIR) / "libtessera_sampler_standard.so");
  return plugin;
}

// docs/sampler.md "Randomness", written out for the tests: draw c of stream s is
// mix64(state0 + (c + 1) gamma) >> 11 * 2^-53, state0 = mix64(s + gamma), mix64 = SplitMix64's
// finaliser.
inline constexpr uint64_t kGamma = 0x9E3779B97F4A7C15ULL;
inline uint64_t reference_mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
inline uint64_t reference_draw_bits(uint64_t seed, uint64_t counter) {
  return reference_mix64(reference_mix64(seed + kGamma) + (counter + 1) * kGamma);
}
inline double reference_uniform(uint64_t seed, uint64_t counter) {
  return static_cast<double>(reference_draw_bits(seed, counter) >> 11) * 0x1.0p-53;
}

// draw: the option "draw" ("rejection", the default, "inverse_cdf" or "race").
inline PluginInstance make_sampler(int threads, const std::string& draw = "rejection") {
  return registry().create(
      standard_plugin(), "{\"threads\":" + std::to_string(threads) + ",\"draw\":\"" + draw + "\"}",
      kCpu);
}

// Every processor off, sampling at temperature 1.
inline ts_sampling_params plain_params(uint64_t seed = 0) {
  ts_sampling_params p{};
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.repetition_penalty = 1.0f;
  p.frequency_penalty = 0.0f;
  p.presence_penalty = 0.0f;
  p.seed = seed;
  p.logprobs = 0;
  p.top_logprobs = 0;
  return p;
}

inline ts_sampler_row make_row(const std::vector<float>& logits, const ts_sampling_params& params,
                               uint64_t counter = 0, const std::vector<int32_t>* prompt = nullptr,
                               const std::vector<int32_t>* output = nullptr) {
  ts_sampler_row row{};
  row.logits = logits.data();
  row.params = params;
  if (prompt != nullptr) {
    row.prompt_tokens = prompt->data();
    row.n_prompt_tokens = static_cast<int64_t>(prompt->size());
  }
  if (output != nullptr) {
    row.output_tokens = output->data();
    row.n_output_tokens = static_cast<int64_t>(output->size());
  }
  row.rng_counter = counter;
  return row;
}

// Results with their own top-logprob arrays of `capacity` entries.
struct ResultBuffers {
  std::vector<ts_sampler_result> results;
  std::vector<int32_t> top_tokens;
  std::vector<float> top_logprobs;
  ResultBuffers(size_t n, int32_t capacity)
      : results(n), top_tokens(n * capacity), top_logprobs(n * capacity) {
    for (size_t i = 0; i < n; ++i) {
      results[i].token = -7;  // anything the sampler must overwrite
      results[i].top_capacity = capacity;
      results[i].top_tokens = capacity > 0 ? top_tokens.data() + i * capacity : nullptr;
      results[i].top_logprobs = capacity > 0 ? top_logprobs.data() + i * capacity : nullptr;
    }
  }
};

inline ts_status call_sample(const PluginInstance& sampler, const std::vector<ts_sampler_row>& rows,
                             int32_t vocab, std::vector<ts_sampler_result>& results) {
  return sampler.table<ts_sampler_table>().sample(
      sampler.get(), rows.data(), static_cast<int32_t>(rows.size()), vocab, results.data());
}

// Samples n rows that share logits and params, with rng counters first_counter .. +n-1.
inline std::vector<int32_t> draw_tokens(const PluginInstance& sampler,
                                        const std::vector<float>& logits,
                                        const ts_sampling_params& params, int64_t n,
                                        const std::vector<int32_t>* prompt = nullptr,
                                        const std::vector<int32_t>* output = nullptr,
                                        uint64_t first_counter = 0) {
  std::vector<ts_sampler_row> rows;
  rows.reserve(n);
  for (int64_t i = 0; i < n; ++i) {
    rows.push_back(make_row(logits, params, first_counter + i, prompt, output));
  }
  ResultBuffers buffers(rows.size(), 0);
  const ts_status status =
      call_sample(sampler, rows, static_cast<int32_t>(logits.size()), buffers.results);
  EXPECT_EQ(status.code, TS_OK) << (status.message ? status.message : "");
  std::vector<int32_t> tokens(n);
  for (int64_t i = 0; i < n; ++i) tokens[i] = buffers.results[i].token;
  return tokens;
}

inline std::vector<int64_t> histogram(const std::vector<int32_t>& tokens, size_t vocab) {
  std::vector<int64_t> counts(vocab, 0);
  for (const int32_t t : tokens) {
    EXPECT_TRUE(t >= 0 && static_cast<size_t>(t) < vocab) << "token " << t;
    if (t >= 0 && static_cast<size_t>(t) < vocab) ++counts[t];
  }
  return counts;
}

// The penalty formulas, written out for the reference (docs/sampler.md).
inline std::vector<double> reference_penalised(const std::vector<float>& logits,
                                               const ts_sampling_params& p,
                                               const std::vector<int32_t>& prompt,
                                               const std::vector<int32_t>& output) {
  std::vector<double> l(logits.begin(), logits.end());
  for (size_t token = 0; token < l.size(); ++token) {
    const auto count = std::count(output.begin(), output.end(), static_cast<int32_t>(token));
    const bool in_prompt =
        std::find(prompt.begin(), prompt.end(), static_cast<int32_t>(token)) != prompt.end();
    if (in_prompt || count > 0) {
      l[token] = l[token] > 0 ? l[token] / p.repetition_penalty : l[token] * p.repetition_penalty;
    }
    l[token] -= p.frequency_penalty * static_cast<double>(count) +
                p.presence_penalty * (count > 0 ? 1.0 : 0.0);
  }
  return l;
}

// Exact sampling distribution: softmax(l / T), then top-k, top-p and min-p on renormalised
// probabilities, with the documented tie rules (ties at a boundary are kept).
inline std::vector<double> reference_distribution(const std::vector<double>& penalised,
                                                  const ts_sampling_params& p) {
  const size_t vocab = penalised.size();
  std::vector<size_t> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return penalised[a] > penalised[b]; });
  std::vector<bool> kept(vocab, true);
  if (p.top_k > 0 && static_cast<size_t>(p.top_k) < vocab) {
    const double kth = penalised[order[p.top_k - 1]];
    for (size_t i = 0; i < vocab; ++i) kept[i] = penalised[i] >= kth;
  }
  auto normalised = [&]() {
    std::vector<double> prob(vocab, 0.0);
    double sum = 0.0;
    for (size_t i = 0; i < vocab; ++i) {
      if (kept[i]) sum += prob[i] = std::exp((penalised[i] - penalised[order[0]]) / p.temperature);
    }
    for (double& x : prob) x /= sum;
    return prob;
  };
  if (p.top_p < 1.0f) {
    const std::vector<double> prob = normalised();
    double cumulative = 0.0;
    double boundary = 0.0;
    for (const size_t i : order) {
      cumulative += prob[i];
      if (cumulative >= p.top_p) {
        boundary = prob[i];
        break;
      }
    }
    for (size_t i = 0; i < vocab; ++i) kept[i] = kept[i] && prob[i] >= boundary;
  }
  if (p.min_p > 0.0f) {
    const std::vector<double> prob = normalised();
    const double top = prob[order[0]];
    for (size_t i = 0; i < vocab; ++i) kept[i] = kept[i] && prob[i] >= p.min_p * top;
  }
  return normalised();
}

// Pearson's chi-square statistic of observed counts against a distribution; bins expected below 5
// draws are pooled (the usual validity rule). Tokens of probability 0 are excluded here; callers
// check they were never drawn.
struct ChiSquare {
  double statistic = 0.0;
  int degrees_of_freedom = 0;
};

inline ChiSquare chi_square(const std::vector<int64_t>& observed,
                            const std::vector<double>& probability) {
  int64_t n = 0;
  for (size_t i = 0; i < observed.size(); ++i) {
    if (probability[i] > 0.0) n += observed[i];
  }
  ChiSquare result;
  int bins = 0;
  double pooled_observed = 0.0;
  double pooled_expected = 0.0;
  for (size_t i = 0; i < observed.size(); ++i) {
    if (probability[i] <= 0.0) continue;
    const double expected = probability[i] * static_cast<double>(n);
    if (expected < 5.0) {
      pooled_observed += static_cast<double>(observed[i]);
      pooled_expected += expected;
      continue;
    }
    const double d = static_cast<double>(observed[i]) - expected;
    result.statistic += d * d / expected;
    ++bins;
  }
  if (pooled_expected > 0.0) {
    const double d = pooled_observed - pooled_expected;
    result.statistic += d * d / pooled_expected;
    ++bins;
  }
  result.degrees_of_freedom = bins - 1;
  return result;
}

// Upper critical value of chi-square with k degrees of freedom at significance 1e-4, by the
// Wilson-Hilferty cube-root normal approximation (Wilson & Hilferty 1931; accurate to ~1% for
// k >= 3, and conservative enough here): k (1 - 2/(9k) + z sqrt(2/(9k)))^3, z = Phi^-1(1 - 1e-4).
inline double chi_square_critical_1e4(int k) {
  constexpr double z = 3.719016485455709;
  const double a = 2.0 / (9.0 * k);
  return k * std::pow(1.0 - a + z * std::sqrt(a), 3.0);
}

// log_softmax in double, the reference for logprobs.
inline std::vector<double> reference_log_softmax(const std::vector<float>& logits) {
  const double max = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (const float l : logits) sum += std::exp(l - max);
  std::vector<double> out(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) out[i] = logits[i] - max - std::log(sum);
  return out;
}

}  // namespace tessera::sampler_test
