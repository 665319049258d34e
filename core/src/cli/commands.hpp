// Each CLI verb lives in its own file and registers itself here; main.cpp only wires them up.
// A command reports failure by throwing tessera::Error (message printed, exit 1) or
// CLI::RuntimeError(code).
#pragma once

#include <CLI/CLI.hpp>

namespace tessera::cli {

void add_plugins_command(CLI::App& app);  // tessera plugins [--json]
void add_config_command(CLI::App& app);   // tessera config check FILE
void add_bench_command(CLI::App& app);
void add_engine_bench_command(CLI::App& app);  // tessera bench engine (after add_bench_command)
void add_model_bench_command(CLI::App& app);   // tessera bench model (after add_bench_command)
void add_generate_command(CLI::App& app);  // tessera generate -c FILE --prompt ...    // tessera bench decode|...
void add_ab_command(CLI::App& app);  // tessera ab A.toml B.toml --prompts FILE.jsonl
void add_serve_command(CLI::App& app);     // tessera serve -c FILE: frontends + engine until SIGTERM
void add_make_checkpoint_command(CLI::App& app);  // tessera make-checkpoint --preset flash ...

}  // namespace tessera::cli
