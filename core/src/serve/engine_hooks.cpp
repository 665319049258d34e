#include "serve/engine_hooks.hpp"

namespace tessera::serve {

EngineSnapshot engine_snapshot(const engine::EngineStats& stats, const ts_kv_layout& main_layout) {
  EngineSnapshot s;
  s.running = stats.running;
  s.waiting = stats.waiting;
  if (stats.main_pages_total > 0) {
    // Pages only the prefix cache holds are reclaimable: counted apart, not as used (an idle
    // server with a warm cache reported 0.998).
    const auto total = static_cast<double>(stats.main_pages_total);
    s.kv_cache_usage = static_cast<double>(stats.main_pages_total - stats.main_pages_free -
                                           stats.main_pages_cached) /
                       total;
    s.kv_cache_cached = static_cast<double>(stats.main_pages_cached) / total;
  }
  // Tokens that needed a cache entry for their prompt: prefilled ones plus those the prefix cache
  // supplied. (Recomputation after preemption is counted too; docs/http.md notes it.)
  s.prefix_cache_queries = stats.prefill_tokens + stats.prefix_hit_tokens;
  s.prefix_cache_hits = stats.prefix_hit_tokens;
  s.preemptions = stats.preemptions;
  s.degenerate_outputs = stats.repetition_hits;
  s.kv_bytes_per_entry = static_cast<int64_t>(main_layout.bytes_per_entry);
  s.kv_pages_total = stats.main_pages_total;
  s.steps = stats.steps;
  s.forward_seconds = stats.forward_seconds;
  s.host_seconds = stats.host_seconds;
  return s;
}

EngineHooks engine_hooks(engine::Engine& engine, const Runtime& runtime) {
  EngineHooks hooks;
  hooks.submit = [&engine](engine::Request request, engine::EventCallback on_event) {
    return engine.submit(std::move(request), std::move(on_event));
  };
  hooks.abort = [&engine](uint64_t id) { engine.abort(id); };
  const ts_kv_layout layout = runtime.kv_format().main_layout();
  hooks.snapshot = [&engine, layout] { return engine_snapshot(engine.stats(), layout); };
  return hooks;
}

}  // namespace tessera::serve
