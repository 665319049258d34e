// Prefix caching (docs/engine.md "Prefix cache"): the block index (chained lookup, salts, LRU
// eviction of leaves), snapshots at the model level (a restored sequence continues exactly like a
// straight run, and copy-on-write keeps two continuations of one snapshot apart), and through the
// engine: reuse skips prefill (counted), isolation (another salt or a one-token difference never
// reuses), and 200 mixed requests give identical outputs with the cache on and off.
#include "engine/prefix_cache.hpp"

#include <gtest/gtest.h>

#include <map>

#include "engine_harness.hpp"

namespace tessera {
namespace {

constexpr const char* kExact = R"({"storage":"fp32"})";

std::vector<int32_t> iota_block(int32_t first, int64_t n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = first++;
  return v;
}

TEST(PrefixCacheIndex, ChainedLookupFindsTheDeepestReadyBlock) {
  engine::PrefixCache cache(4);
  const auto tokens = iota_block(10, 13);  // blocks [10..13] [14..17] [18..21] + 1
  const std::span<const int32_t> t(tokens);
  const uint64_t a = cache.add_pending(0, "", t.subspan(0, 4));
  const uint64_t b = cache.add_pending(a, "", t.subspan(4, 4));
  EXPECT_EQ(cache.lookup("", t, 13).length, 0);  // pending blocks are not reused
  cache.mark_ready(a);
  cache.mark_ready(b);
  const auto m = cache.lookup("", t, 13);
  EXPECT_EQ(m.node, b);
  EXPECT_EQ(m.length, 8);
  EXPECT_EQ(cache.lookup("", t, 7).length, 4);  // limit: at least one token left to compute
  EXPECT_EQ(cache.find_child(a, "", t.subspan(4, 4)), b);
}

TEST(PrefixCacheIndex, SaltAndOneTokenDifferenceNeverMatch) {
  engine::PrefixCache cache(4);
  const auto tokens = iota_block(10, 9);
  const uint64_t a = cache.add_pending(0, "alice", std::span<const int32_t>(tokens).subspan(0, 4));
  cache.mark_ready(a);
  EXPECT_EQ(cache.lookup("alice", tokens, 8).length, 4);
  EXPECT_EQ(cache.lookup("bob", tokens, 8).length, 0);
  EXPECT_EQ(cache.lookup("", tokens, 8).length, 0);
  auto changed = tokens;
  changed[3] += 1;
  EXPECT_EQ(cache.lookup("alice", changed, 8).length, 0);
  // The same block after a different parent is a different node.
  EXPECT_EQ(cache.find_child(a, "alice", std::span<const int32_t>(tokens).subspan(0, 4)), 0u);
}

TEST(PrefixCacheIndex, EvictsLeastRecentlyUsedLeavesOnly) {
  engine::PrefixCache cache(2);
  const std::vector<int32_t> x{1, 2, 3, 4}, y{5, 6, 7, 8};
  const uint64_t x1 = cache.add_pending(0, "", std::span<const int32_t>(x).subspan(0, 2));
  const uint64_t x2 = cache.add_pending(x1, "", std::span<const int32_t>(x).subspan(2, 2));
  const uint64_t y1 = cache.add_pending(0, "", std::span<const int32_t>(y).subspan(0, 2));
  for (uint64_t id : {x1, x2, y1}) cache.mark_ready(id);
  cache.lookup("", y, 4);            // y1 used last
  EXPECT_EQ(cache.evict_one(), x2);  // x1 has a child: not a leaf
  EXPECT_EQ(cache.evict_one(), x1);  // now a leaf, older than y1
  EXPECT_EQ(cache.evict_one(), y1);
  EXPECT_EQ(cache.evict_one(), 0u);
  const uint64_t p = cache.add_pending(0, "", std::span<const int32_t>(x).subspan(0, 2));
  EXPECT_EQ(cache.evict_one(), 0u);  // pending: not evictable
  cache.discard_pending(p);
  EXPECT_EQ(cache.size(), 0u);
}

// Model level: sequence A prefills 300 tokens with a snapshot at 128 (inside its chunk); B is
// restored from it and continues with other tokens than A. Page size 64: the snapshot's CSA and
// HCA entry pages are partly filled (32 and 1 of 64 entries) while A has written further into
// them, so B must copy before it appends (COW) or it would overwrite what A reads.
TEST(PrefixSnapshot, RestoredSequenceContinuesLikeAStraightRun) {
  Runtime rt(engine_test::runtime_options(0.02, 64, kExact));
  const auto prompt = engine_test::make_prompt(42, 300);
  const auto tail_b = engine_test::make_prompt(43, 60);
  auto forward = [&](SequenceKv& kv, std::span<const int32_t> tokens) {
    dsv4::ForwardBatch batch;
    batch.chunks.push_back({&kv, tokens, true});
    return rt.model().forward(batch);
  };
  auto a = rt.new_sequence();
  a->request_snapshot(128);
  forward(*a, prompt);
  auto snapshots = a->take_snapshots();
  ASSERT_EQ(snapshots.size(), 1u);
  EXPECT_EQ(snapshots[0].length(), 128);
  SequenceKv b(rt.model_config(), rt.pools(), snapshots[0]);
  EXPECT_EQ(b.length(), 128);

  // Straight references: A' = the prompt then A's continuation; B' = prompt[0, 128) + tail_b.
  auto a_ref = rt.new_sequence();
  forward(*a_ref, prompt);
  auto b_ref = rt.new_sequence();
  forward(*b_ref, std::span<const int32_t>(prompt).subspan(0, 128));

  // Interleave: B writes, A writes, B writes again; each must match its straight twin.
  const auto tail_a = engine_test::make_prompt(44, 60);
  for (int round = 0; round < 3; ++round) {
    const auto piece_b = std::span<const int32_t>(tail_b).subspan(round * 20, 20);
    const auto piece_a = std::span<const int32_t>(tail_a).subspan(round * 20, 20);
    const auto lb = forward(b, piece_b);
    const auto lb_ref = forward(*b_ref, piece_b);
    const auto la = forward(*a, piece_a);
    const auto la_ref = forward(*a_ref, piece_a);
    double worst_b = 0;
    for (size_t i = 0; i < lb.values.size(); ++i)
      worst_b = std::max(worst_b, std::abs(double(lb.values[i]) - lb_ref.values[i]));
    EXPECT_LE(worst_b, 1e-4) << "round " << round;  // prefix computed in a 300-row vs 128-row GEMM
    EXPECT_EQ(la.values, la_ref.values) << "round " << round;  // A untouched by B's writes
  }
  snapshots.clear();
}

class EnginePrefixCache : public ::testing::Test {
 protected:
  static std::vector<engine_test::Output> run(Runtime& rt, bool cache,
                                              const std::vector<engine::Request>& requests,
                                              engine::EngineStats* stats = nullptr) {
    engine::Engine engine(rt, engine_test::engine_options(16, 256, 128, cache));
    std::vector<engine_test::Output> out;
    for (const auto& r : requests) out.push_back(engine_test::run_all(engine, {r})[0]);
    if (stats != nullptr) *stats = engine.stats();
    return out;
  }
};

TEST_F(EnginePrefixCache, SharedPrefixSkipsItsPrefill) {
  Runtime rt(engine_test::runtime_options());  // the default bf16 cache
  const auto system = engine_test::make_prompt(1, 270);
  std::vector<engine::Request> requests;
  for (int i = 0; i < 3; ++i) {
    auto prompt = system;
    const auto user = engine_test::make_prompt(10 + i, 30);
    prompt.insert(prompt.end(), user.begin(), user.end());
    requests.push_back(engine_test::greedy(prompt, 16));
  }
  engine::EngineStats on, off;
  const auto with_cache = run(rt, true, requests, &on);
  const auto without = run(rt, false, requests, &off);
  for (size_t i = 0; i < requests.size(); ++i) EXPECT_EQ(with_cache[i].tokens, without[i].tokens);
  // Blocks are 128 tokens (lcm of page 16 and ratios 4, 128): requests 2 and 3 reuse 256 each.
  EXPECT_EQ(on.prefix_hit_tokens, 512);
  EXPECT_EQ(with_cache[0].usage.cached_tokens, 0);
  EXPECT_EQ(with_cache[1].usage.cached_tokens, 256);
  EXPECT_EQ(with_cache[2].usage.cached_tokens, 256);
  EXPECT_EQ(on.prefill_tokens + on.prefix_hit_tokens, off.prefill_tokens);
  EXPECT_EQ(off.prefix_hit_tokens, 0);
}

TEST_F(EnginePrefixCache, DifferentSaltNeverReuses) {
  Runtime rt(engine_test::runtime_options());
  auto a = engine_test::greedy(engine_test::make_prompt(2, 300), 8);
  auto b = a;
  a.cache_salt = "tenant-a";
  b.cache_salt = "tenant-b";
  auto c = a;  // same salt as a: reuses
  engine::EngineStats s;
  const auto out = run(rt, true, {a, b, c}, &s);
  EXPECT_EQ(out[1].usage.cached_tokens, 0);
  EXPECT_EQ(out[2].usage.cached_tokens, 256);
  EXPECT_EQ(s.prefix_hit_tokens, 256);
}

TEST_F(EnginePrefixCache, OneTokenDifferenceNeverReusesItsBlock) {
  Runtime rt(engine_test::runtime_options());
  const auto base = engine_test::greedy(engine_test::make_prompt(3, 300), 8);
  auto early = base;  // differs in block 0: nothing is reused
  early.prompt[5] = early.prompt[5] == 7 ? 8 : 7;
  auto late = base;  // differs in block 1 (position 200): block 0 only
  late.prompt[200] = late.prompt[200] == 7 ? 8 : 7;
  const auto out = run(rt, true, {base, early, late});
  EXPECT_EQ(out[1].usage.cached_tokens, 0);
  EXPECT_EQ(out[2].usage.cached_tokens, 128);
  const auto reference = run(rt, false, {early, late});
  EXPECT_EQ(out[1].tokens, reference[0].tokens);
  EXPECT_EQ(out[2].tokens, reference[1].tokens);
}

// 200 requests over a few shared prefixes, salts and near-duplicates, greedy and sampled, in
// waves so later ones find earlier blocks; a pool small enough to evict. Every output must be
// identical with the cache on and off (the guard against context confabulation).
TEST_F(EnginePrefixCache, TwoHundredMixedRequestsIdenticalWithCacheOnAndOff) {
  std::vector<std::vector<int32_t>> systems;
  for (int s = 0; s < 4; ++s) systems.push_back(engine_test::make_prompt(900 + s, 140 + 60 * s));
  const std::vector<std::string> salts{"", "", "blue", "green"};
  std::vector<engine::Request> requests;
  for (int i = 0; i < 200; ++i) {
    auto prompt = systems[static_cast<size_t>(i % 4)];
    if (i % 7 == 3) prompt[static_cast<size_t>(i % static_cast<int>(prompt.size()))] ^= 1;
    const auto user = engine_test::make_prompt(2000 + i, 5 + i % 23);
    prompt.insert(prompt.end(), user.begin(), user.end());
    auto r = i % 2 == 0 ? engine_test::greedy(prompt, 6 + i % 5)
                        : engine_test::sampled(prompt, 6 + i % 5, 50 + static_cast<uint64_t>(i));
    r.cache_salt = salts[static_cast<size_t>((i / 4) % 4)];
    requests.push_back(std::move(r));
  }
  auto run_waves = [&](Runtime& rt, bool cache, engine::EngineStats& stats) {
    engine::Engine engine(rt, engine_test::engine_options(32, 512, 128, cache));
    std::vector<engine_test::Output> out;
    for (size_t w = 0; w < requests.size(); w += 25) {
      const std::vector<engine::Request> wave(requests.begin() + static_cast<long>(w),
                                              requests.begin() + static_cast<long>(w + 25));
      const auto got = engine_test::run_all(engine, wave);
      out.insert(out.end(), got.begin(), got.end());
    }
    stats = engine.stats();
    return out;
  };
  engine::EngineStats on, off;
  Runtime rt_on(engine_test::runtime_options(0.0015, 16, kExact));
  const auto with_cache = run_waves(rt_on, true, on);
  Runtime rt_off(engine_test::runtime_options(0.02, 16, kExact));
  const auto without = run_waves(rt_off, false, off);
  ASSERT_EQ(with_cache.size(), 200u);
  int differing = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(*with_cache[i].finish, engine::FinishReason::kLength) << with_cache[i].error;
    if (with_cache[i].tokens != without[i].tokens) ++differing;
  }
  EXPECT_EQ(differing, 0);
  EXPECT_GT(on.prefix_hit_tokens, 20000);  // the cache really served
  EXPECT_GT(on.prefix_evictions, 0);       // and had to make room
  std::printf("cache on: %lld tokens reused, %lld evictions, pool %lld pages\n",
              static_cast<long long>(on.prefix_hit_tokens),
              static_cast<long long>(on.prefix_evictions),
              static_cast<long long>(on.main_pages_total));
}

}  // namespace
}  // namespace tessera
