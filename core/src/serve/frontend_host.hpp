// The [[frontend]] entries of a configuration as running plugin instances: each is found in the
// PluginRegistry (kind frontend), its options validated by the plugin's schema, created, started
// with the engine table, and finally drained with stop(deadline) — all entries in parallel.
//
// Thread-safety: construct, start_all and stop_all from one thread (the serve command's).
// Lifetime: destroy the FrontendHost after the engine has stopped calling back (docs/http.md,
// "Drain"), and before the registry.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "plugins/registry.hpp"
#include "tessera/plugin_abi.h"
#include "util/plugin_instance.hpp"

namespace tessera::serve {

class FrontendHost {
 public:
  // Creates (does not start) every frontend of `config`; throws tessera::Error naming the entry
  // ("[[frontend]] entry 2 (plugin \"http\") at file:line: ...") when one is missing, refuses its
  // options or fails to create.
  FrontendHost(const PluginRegistry& registry, const Config& config);
  ~FrontendHost();
  FrontendHost(const FrontendHost&) = delete;
  FrontendHost& operator=(const FrontendHost&) = delete;

  // Starts each in order; on a failure stops those already started and throws.
  void start_all(const ts_engine_api* engine);
  // Drains every started frontend at once, each with the same deadline; returns when all did.
  void stop_all(std::chrono::milliseconds deadline);

  [[nodiscard]] std::size_t size() const { return entries_.size(); }
  [[nodiscard]] std::vector<std::string> labels() const;

 private:
  struct Entry {
    std::string label;  // for messages
    PluginInstance instance;
    bool started = false;
  };
  std::vector<Entry> entries_;
};

}  // namespace tessera::serve
