// Collects configuration problems with their TOML source positions, so one run reports all of
// them (sorted by position) instead of stopping at the first. Internal to the config loader.
#pragma once

#include <toml++/toml.h>

#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"

namespace tessera::config_detail {

class DiagnosticCollector {
 public:
  explicit DiagnosticCollector(std::string file) : file_(std::move(file)) {}

  [[nodiscard]] SourceLocation at(const toml::source_region& region) const;
  [[nodiscard]] SourceLocation file_start() const { return SourceLocation{file_, 1, 1}; }
  void add(SourceLocation where, std::string message);
  void add(const toml::source_region& region, std::string message) {
    add(at(region), std::move(message));
  }

  [[nodiscard]] bool empty() const { return diagnostics_.empty(); }
  // Throws ConfigError with every diagnostic, sorted by line then column, if there is any.
  void throw_if_any();

 private:
  std::string file_;
  std::vector<ConfigDiagnostic> diagnostics_;
};

// A key as it may be shown in a message: control bytes escaped (\xNN), at most 64 bytes.
[[nodiscard]] std::string printable(std::string_view text);

// "a string", "an integer", "a float", "a boolean", "an array", "a table", "a date", ...
[[nodiscard]] std::string_view describe_type(const toml::node& node);

}  // namespace tessera::config_detail
