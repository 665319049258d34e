// tessera serve -c FILE: the configured [[frontend]] plugins in front of the engine until SIGTERM
// or SIGINT, then a drain (serve/server.hpp, docs/http.md).
#include <memory>

#include "cli/commands.hpp"
#include "serve/server.hpp"

namespace tessera::cli {

void add_serve_command(CLI::App& app) {
  auto options = std::make_shared<serve::ServeOptions>();
  auto drain_seconds = std::make_shared<double>(30.0);
  auto* cmd = app.add_subcommand("serve", "Serve the model through the configured frontends");
  cmd->add_option("-c,--config", options->config_path, "TOML configuration")->required();
  cmd->add_option("--served-model-name", options->served_model_name,
                  "model name clients send (default: the model directory's name)");
  cmd->add_option("--drain-timeout", *drain_seconds,
                  "seconds in-flight requests may take to finish after SIGTERM")
      ->check(CLI::Range(0.0, 86400.0));
  cmd->add_option("--reasoning-effort-profile", options->reasoning_effort_profile,
                  "reasoning_effort names the chat template knows: preview (high, max) or "
                  "official (low, high, max)")
      ->check(CLI::IsMember({"preview", "official"}));
  cmd->callback([options, drain_seconds] {
    options->drain_timeout = std::chrono::milliseconds(static_cast<int64_t>(*drain_seconds * 1000));
    const int status = serve::run_server(*options);
    if (status != 0) throw CLI::RuntimeError(status);
  });
}

}  // namespace tessera::cli
