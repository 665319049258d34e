// The MoE router runs token by token on the compute threads (model/moe.cpp); a checkpoint's bad
// hash-routing table or a token outside it must still come out as an error naming the value (not
// an exception escaping a worker thread), for the lowest offending token, with two threads.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "model/dsv4_weights.hpp"
#include "model/moe.hpp"
#include "ops/compute_threads.hpp"
#include "util/check.hpp"

namespace tessera::dsv4 {
namespace {

const std::filesystem::path kShipped =
    std::filesystem::path(TESSERA_SOURCE_DIR) / "models/tiny-dsv4";

struct Fixture {
  ModelConfig config = load_model_config(kShipped);
  ModelWeights weights = load_model_weights(kShipped, config);
  int64_t tokens = 64;
  std::vector<float> x, out;
  std::vector<int32_t> ids;
  Fixture() {
    x.resize(static_cast<size_t>(tokens * config.hidden_size));
    for (size_t i = 0; i < x.size(); ++i) {
      x[i] = static_cast<float>(i % 13) * 0.01f - 0.06f;
    }
    out.resize(x.size());
    for (int64_t t = 0; t < tokens; ++t) {
      ids.push_back(static_cast<int32_t>(t * 7 % 100));
    }
  }
  // The error moe_forward throws on layer 0 (a hash layer), or "" when it returns.
  std::string error_of(const Moe& moe) {
    try {
      moe_forward(config, moe, true, x.data(), ids.data(), tokens, out.data(), 1);
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  }
};

TEST(MoeRouting, HashTableEntryOutsideTheExpertsIsAnErrorNamingIt) {
  ops::set_compute_threads(2);
  Fixture f;
  ASSERT_TRUE(f.config.is_hash_layer(0));
  Moe moe = f.weights.layers[0].ffn;
  EXPECT_EQ(f.error_of(moe), "");  // the table as shipped routes every token
  const int64_t K = f.config.experts_per_token, E = f.config.n_routed_experts;
  // Token 50's id: its second pick becomes E + 3; token 60's first becomes -1 (50 is lower).
  moe.tid2eid[static_cast<size_t>(f.ids[50] * K + 1)] = static_cast<int32_t>(E + 3);
  moe.tid2eid[static_cast<size_t>(f.ids[60] * K)] = -1;
  const std::string error = f.error_of(moe);
  EXPECT_NE(
      error.find("routing picked expert " + std::to_string(E + 3) + " of " + std::to_string(E)),
      std::string::npos)
      << error;
}

TEST(MoeRouting, TokenOutsideTheHashTableIsAnErrorNamingIt) {
  ops::set_compute_threads(2);
  Fixture f;
  const Moe& moe = f.weights.layers[0].ffn;
  f.ids[40] = static_cast<int32_t>(f.config.vocab_size + 5);
  f.ids[20] = -2;  // the lower token is the one named
  const std::string error = f.error_of(moe);
  EXPECT_NE(error.find("hash routing: token id -2 outside tid2eid"), std::string::npos) << error;
}

}  // namespace
}  // namespace tessera::dsv4
