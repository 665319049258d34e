// `tessera serve`: loads the configuration, starts every [[frontend]] (they answer /health and
// say "loading" at once), loads the model and the engine, serves until SIGTERM or SIGINT, then
// drains (docs/http.md, "Drain"):
//   1. health becomes "draining": new generation requests get 503, /ready 503;
//   2. each frontend stops accepting and lets in-flight requests finish for up to
//      drain_timeout, then aborts the rest; all frontends drain in parallel;
//   3. the engine finishes what is left (aborted requests end at once), then everything is
//      destroyed in reverse order and the process exits 0.
// A second signal during the drain exits at once with 128 + signal.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

namespace tessera::serve {

struct ServeOptions {
  std::filesystem::path config_path;
  std::string served_model_name;  // "": the model directory's name
  std::chrono::milliseconds drain_timeout{30000};
  std::string reasoning_effort_profile = "preview";  // "preview" | "official"
};

// Returns the process exit status. Throws tessera::Error for start-up failures.
int run_server(const ServeOptions& options);

}  // namespace tessera::serve
