#include "config/config_diagnostics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

namespace tessera::config_detail {

SourceLocation DiagnosticCollector::at(const toml::source_region& region) const {
  // toml++ leaves 0 for nodes it created itself (none reach us today); keep positions 1-based.
  return SourceLocation{file_, std::max<std::int64_t>(1, region.begin.line),
                        std::max<std::int64_t>(1, region.begin.column)};
}

void DiagnosticCollector::add(SourceLocation where, std::string message) {
  diagnostics_.push_back(ConfigDiagnostic{std::move(where), std::move(message)});
}

void DiagnosticCollector::throw_if_any() {
  if (diagnostics_.empty()) return;
  std::stable_sort(diagnostics_.begin(), diagnostics_.end(),
                   [](const ConfigDiagnostic& a, const ConfigDiagnostic& b) {
                     return std::tie(a.where.line, a.where.column) <
                            std::tie(b.where.line, b.where.column);
                   });
  throw ConfigError(std::move(diagnostics_));
}

std::string printable(std::string_view text) {
  constexpr std::size_t kMaxShown = 64;
  std::size_t shown = std::min(text.size(), kMaxShown);
  // Never cut a UTF-8 sequence in half: back off over continuation bytes (10xxxxxx).
  while (shown < text.size() && shown > 0 &&
         (static_cast<unsigned char>(text[shown]) & 0xc0) == 0x80)
    --shown;
  std::string out;
  for (std::size_t i = 0; i < shown; ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x20 || byte == 0x7f || byte == '`')
      out += fmt::format("\\x{:02x}", byte);
    else
      out += static_cast<char>(byte);
  }
  if (shown < text.size()) out += "...";
  return out;
}

std::string_view describe_type(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

}  // namespace tessera::config_detail
