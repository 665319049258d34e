// tessera ab A.toml B.toml --prompts FILE.jsonl [--max-tokens N] [--seeds K] [--out DIR]:
// compares two configurations on the same prompts (docs/ab.md). Prints the table to stdout and
// writes DIR/ab_report.json and DIR/ab_report.html.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "ab/ab_arm.hpp"
#include "ab/ab_runner.hpp"
#include "ab/prompt_set.hpp"
#include "ab/report_html.hpp"
#include "ab/report_json.hpp"
#include "ab/report_text.hpp"
#include "cli/commands.hpp"
#include "util/check.hpp"

namespace tessera::cli {

namespace {

struct AbArgs {
  std::string config_a, config_b, prompts, out = "ab-report";
  int64_t max_tokens = 64;
  int64_t seeds = 1;
  uint64_t seed_base = 0;
  bool no_warmup = false;
  std::vector<std::string> plugin_dirs;
};

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  TS_CHECK(out.good(), "cannot write `{}`", path.string());
}

void run_ab_command(const AbArgs& args) {
  std::vector<std::filesystem::path> dirs(args.plugin_dirs.begin(), args.plugin_dirs.end());
  ab::ArmPair arms = ab::load_arm_pair(args.config_a, args.config_b, dirs);
  std::vector<ab::AbPrompt> prompts = ab::load_prompts(args.prompts);
  // The stand-in tokenizer of a model without tokenizer.json cannot encode text: refuse it.
  ab::tokenize_prompts(prompts, arms.a.tokenizer_is_synthetic ? nullptr : arms.a.tokenizer.get(),
                       arms.a.runtime->model_config().vocab_size);
  ab::AbOptions options;
  options.prompts_path = args.prompts;
  options.max_tokens = args.max_tokens;
  options.seeds = args.seeds;
  options.seed_base = args.seed_base;
  options.warmup = !args.no_warmup;
  const ab::AbReport report = ab::run_ab(
      arms, prompts, options, [](const std::string& line) { spdlog::info("ab: {}", line); });

  std::filesystem::create_directories(args.out);
  const auto json_path = std::filesystem::path(args.out) / "ab_report.json";
  const auto html_path = std::filesystem::path(args.out) / "ab_report.html";
  write_file(json_path, ab::report_to_json(report).dump(
                            2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) +
                            "\n");
  write_file(html_path, ab::report_to_html(report));
  std::fputs(ab::report_to_text(report).c_str(), stdout);
  fmt::print("\nwrote {} and {}\n", json_path.string(), html_path.string());
}

}  // namespace

void add_ab_command(CLI::App& app) {
  auto args = std::make_shared<AbArgs>();
  auto* cmd = app.add_subcommand(
      "ab", "Compare two configurations on the same prompts (teacher-forced and free-running)");
  cmd->add_option("config_a", args->config_a, "configuration of arm A (TOML)")->required();
  cmd->add_option("config_b", args->config_b, "configuration of arm B (TOML)")->required();
  cmd->add_option("--prompts", args->prompts,
                  "JSONL: {\"prompt\": text} | {\"messages\": [...]} | {\"token_ids\": [...]}")
      ->required();
  cmd->add_option("--max-tokens", args->max_tokens, "tokens per generation (default 64)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--seeds", args->seeds, "generations per prompt, seeds seed-base.. (default 1)")
      ->check(CLI::Range(int64_t{1}, int64_t{10000}));
  cmd->add_option("--seed-base", args->seed_base, "first seed (default 0)");
  cmd->add_option("--out", args->out, "directory for ab_report.json and ab_report.html")
      ->capture_default_str();
  cmd->add_option("--plugin-dir", args->plugin_dirs, "extra plugin directory (searched first)");
  cmd->add_flag("--no-warmup", args->no_warmup, "skip the untimed warm-up generation per arm");
  cmd->callback([args] { run_ab_command(*args); });
}

}  // namespace tessera::cli
