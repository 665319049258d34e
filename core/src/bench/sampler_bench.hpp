// `tessera bench sampler`: one engine step's sampling, i.e. the configured sampler plugin's
// sample() on `rows` rows of `vocab` logits, timed per call for greedy, temperature 1 and top-p
// settings. Logits are Gaussian with a chosen spread: a small spread gives the flat rows of a
// random-weight model (most of the vocabulary in a top-p nucleus), a large one the peaked rows of
// a trained model. Timed with the same rows every call (hot: in cache, as right after the
// vocabulary head wrote them) and with rows from a ring several times the cache (cold). With
// hints = "groups" each row comes with its scan and column-group maxima (found before the timing,
// as the engine's vocabulary head finds them) through sample_grouped, the engine's path.
#pragma once

#include <string>
#include <vector>

namespace tessera::bench {

struct SamplerBenchOptions {
  std::string sampler = "standard";
  std::string sampler_options = "{}";
  std::string plugin_dir;
  int rows = 64;
  std::vector<int> vocab = {16384, 129280};
  std::vector<double> logit_std = {1.0, 4.0};
  std::vector<int> threads = {1, 2};
  double seconds_per_cell = 0.3;
  std::string hints = "none";  // none: sample(); groups: sample_grouped() with the rows' groups
  int context_tokens = 3;      // each row's prompt_tokens: a request's whole context, every step
  std::vector<std::string> settings = {"greedy", "t1", "top_p"};  // which rows of kSettings
};

// Runs every vocab x spread x setting x threads and returns the markdown table.
std::string run_sampler_bench(const SamplerBenchOptions& options);

}  // namespace tessera::bench
