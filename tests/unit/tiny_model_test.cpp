// The shipped model (models/tiny-dsv4) end to end through the configured plugins: sampled text
// comes back as words, and greedy decoding loops until the repetition guard stops it — the very
// failure the guard exists for (docs/generation.md, models/tiny-dsv4/README.md).
#include <gtest/gtest.h>

#include "config/config.hpp"
#include "generation/sampling_defaults.hpp"
#include "runtime/generator.hpp"
#include "runtime/runtime.hpp"
#include "tokenizer/tokenizer.hpp"

namespace tessera {
namespace {

const std::filesystem::path kModel = std::filesystem::path(TESSERA_SOURCE_DIR) / "models/tiny-dsv4";

struct Shipped {
  Runtime runtime;
  tokenizer::Tokenizer tok;
  static RuntimeOptions options() {
    RuntimeOptions o;
    o.model_dir = kModel;
    o.plugin_dirs = {TESSERA_PLUGIN_DIR};
    o.memory_gib = 0.1;
    o.max_context = 2048;
    return o;
  }
  Shipped() : runtime(options()), tok(tokenizer::Tokenizer::from_file(kModel / "tokenizer.json")) {}
};

TEST(TinyModel, GreedyLoopIsStoppedByTheRepetitionGuard) {
  Shipped m;
  int stopped = 0;
  for (const char* prompt : {"Apple (n.)", "And the LORD said unto Moses,"}) {
    GenerateRequest r;
    r.prompt = m.tok.encode(prompt);
    r.sampling = neutral_sampling();  // temperature 0
    r.max_tokens = 600;
    const GenerateResult g = generate(m.runtime, m.tok, r);
    std::printf("greedy %-32s -> %s after %zu tokens\n", prompt, g.finish_reason.c_str(),
                g.tokens.size());
    stopped += g.finish_reason == "repetition";
  }
  EXPECT_EQ(stopped, 2);
}

TEST(TinyModel, SampledTextIsWordsAndDefaultsComeFromTheModel) {
  Shipped m;
  const auto defaults = generation::resolve_sampling_defaults(default_config().sampler.defaults, kModel);
  EXPECT_EQ(defaults.source.count("temperature"), 1u);
  EXPECT_TRUE(defaults.model_recommends_sampling);
  EXPECT_FALSE(generation::greedy_warning(defaults, 0.0).empty());
  GenerateRequest r;
  r.prompt = m.tok.encode("And God said,");
  r.sampling = neutral_sampling();
  r.sampling.temperature = static_cast<float>(defaults.values.temperature);
  r.sampling.top_p = static_cast<float>(defaults.values.top_p);
  r.sampling.seed = 7;
  r.max_tokens = 60;
  const GenerateResult g = generate(m.runtime, m.tok, r);
  std::printf("sampled: %s\n", g.text.c_str());
  ASSERT_FALSE(g.text.empty());
  int letters = 0, spaces = 0;
  for (char c : g.text) {
    letters += std::isalpha(static_cast<unsigned char>(c)) != 0;
    spaces += c == ' ';
  }
  EXPECT_GT(letters, static_cast<int>(g.text.size()) / 2);  // mostly letters, split into words
  EXPECT_GT(spaces, 3);
}

}  // namespace
}  // namespace tessera
