// Binds ServingApi to a running engine::Engine: submit/abort go straight through; the metrics
// snapshot is read from Engine::stats() and the kv format's layout at scrape time.
#pragma once

#include "engine/engine.hpp"
#include "runtime/runtime.hpp"
#include "serve/serving_api.hpp"

namespace tessera::serve {

// `engine` and `runtime` must outlive every use of the hooks (the serve command destroys the
// ServingApi's users — frontends — before them... and the engine before the runtime).
[[nodiscard]] EngineHooks engine_hooks(engine::Engine& engine, const Runtime& runtime);

// The snapshot alone (tests, `tessera bench`).
[[nodiscard]] EngineSnapshot engine_snapshot(const engine::EngineStats& stats,
                                             const ts_kv_layout& main_layout);

}  // namespace tessera::serve
