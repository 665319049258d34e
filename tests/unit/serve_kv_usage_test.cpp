// vllm:kv_cache_usage_perc counts the pages sequences use; pages only the prefix cache holds are
// reclaimable and go to tessera:kv_cache_prefix_cached_perc instead (an idle server with a warm
// prefix cache reported 0.998 used).
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "engine_harness.hpp"
#include "serve/engine_hooks.hpp"
#include "serve/serve_metrics.hpp"

namespace tessera {
namespace {

TEST(ServeKvUsage, PrefixCachedPagesAreNotCountedAsUsed) {
  Runtime rt(engine_test::runtime_options());
  engine::Engine engine(rt, engine_test::engine_options(64, 512, 128, /*prefix_cache=*/true));
  const auto outputs =
      engine_test::run_all(engine, {engine_test::greedy(engine_test::make_prompt(5, 300), 4)});
  ASSERT_EQ(outputs.size(), 1u);
  // The stats are published once per loop iteration: wait for the one after the finish.
  engine::EngineStats stats = engine.stats();
  for (int i = 0; i < 200 && (stats.in_flight != 0 || stats.running != 0); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    stats = engine.stats();
  }
  ASSERT_GT(stats.main_pages_cached, 0) << "the prompt left no prefix-cache pages";
  // Idle: every page that is not free is the cache's alone.
  EXPECT_EQ(stats.main_pages_total - stats.main_pages_free, stats.main_pages_cached);
  const serve::EngineSnapshot snapshot =
      serve::engine_snapshot(stats, rt.kv_format().main_layout());
  EXPECT_EQ(snapshot.kv_cache_usage, 0.0);
  EXPECT_GT(snapshot.kv_cache_cached, 0.0);
  serve::ServeMetrics metrics(4096);
  const std::string text = metrics.exposition("tiny", snapshot);
  EXPECT_NE(text.find("vllm:kv_cache_usage_perc{model_name=\"tiny\"} 0\n"), std::string::npos)
      << text.substr(text.find("vllm:kv_cache_usage_perc"), 300);
  EXPECT_NE(text.find("tessera:kv_cache_prefix_cached_perc{model_name=\"tiny\"} "),
            std::string::npos);
}

}  // namespace
}  // namespace tessera
