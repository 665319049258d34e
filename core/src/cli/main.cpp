// tessera: the command-line entry. Verbs are registered from cli/*_command.cpp.
#include <fmt/format.h>
#include <malloc.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "cli/commands.hpp"
#include "util/check.hpp"

int main(int argc, char** argv) {
  // A forward step allocates its activations (up to a few MiB: the logits of a batch) and frees
  // them again. glibc would hand blocks over 128 KiB (or its adapted threshold) back to the kernel
  // and fault the pages in afresh on the next step (~400 faults a step at 64 sequences); keeping
  // them in the heap costs at most what one step uses.
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  // stdout carries what a command produces (generated text, JSON listings, reports), so that
  // `tessera generate ... > out.txt` captures only the text; logs go to stderr. spdlog's own
  // default logger writes to stdout.
  spdlog::set_default_logger(std::make_shared<spdlog::logger>(
      "", std::make_shared<spdlog::sinks::stderr_color_sink_mt>()));
  CLI::App app{"Tessera: DeepSeek-V4 inference with pluggable attention, KV cache and samplers"};
  app.set_version_flag("--version", TESSERA_VERSION);
  app.require_subcommand(1);
  tessera::cli::add_plugins_command(app);
  tessera::cli::add_config_command(app);
  tessera::cli::add_bench_command(app);
  tessera::cli::add_engine_bench_command(app);
  tessera::cli::add_model_bench_command(app);
  tessera::cli::add_generate_command(app);
  tessera::cli::add_ab_command(app);
  tessera::cli::add_serve_command(app);
  tessera::cli::add_make_checkpoint_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const tessera::Error& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
  return 0;
}
