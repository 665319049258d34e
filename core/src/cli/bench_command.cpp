// tessera bench decode: prints the batch-1 decode table (bench/decode_bench.hpp).
#include <fmt/format.h>

#include <memory>

#include "bench/decode_bench.hpp"
#include "cli/commands.hpp"

namespace tessera::cli {

void add_bench_command(CLI::App& app) {
  auto* bench = app.add_subcommand("bench", "Benchmarks (tables for docs/perf.md)");
  bench->require_subcommand(1);
  auto options = std::make_shared<bench::DecodeBenchOptions>();
  auto* decode =
      bench->add_subcommand("decode", "batch-1 decode of a random checkpoint vs copy bandwidth");
  decode->add_option("--preset", options->preset, "model size: 50m | tiny")->capture_default_str();
  decode->add_option("--tokens", options->decode_tokens, "decode steps timed")
      ->capture_default_str();
  decode->add_option("--prompt-tokens", options->prompt_tokens, "prefill length")
      ->capture_default_str();
  decode->add_option("--threads", options->threads,
                     "threads of the decode (BLAS) and of the copy loop (0: all)");
  decode->add_option("--plugin-dir", options->plugin_dir, "extra plugin directory");
  decode->callback([options] {
    const auto result = bench::run_decode_bench(*options);
    fmt::print("{}", bench::format_decode_table(*options, result));
  });
}

}  // namespace tessera::cli
