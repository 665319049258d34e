#include "config/toml_to_json.hpp"

#include <fmt/format.h>

#include <cmath>
#include <string>

namespace tessera::config_detail {

nlohmann::json toml_to_json(const toml::node& node, std::string_view path,
                            DiagnosticCollector& diagnostics) {
  switch (node.type()) {
    case toml::node_type::table: {
      nlohmann::json object = nlohmann::json::object();
      for (const auto& [key, value] : *node.as_table())
        object[std::string(key.str())] =
            toml_to_json(value, fmt::format("{}.{}", path, printable(key.str())), diagnostics);
      return object;
    }
    case toml::node_type::array: {
      nlohmann::json array = nlohmann::json::array();
      std::size_t index = 0;
      for (const toml::node& element : *node.as_array())
        array.push_back(toml_to_json(element, fmt::format("{}[{}]", path, index++), diagnostics));
      return array;
    }
    case toml::node_type::string:
      return node.as_string()->get();
    case toml::node_type::integer:
      return node.as_integer()->get();
    case toml::node_type::floating_point: {
      const double value = node.as_floating_point()->get();
      if (std::isfinite(value)) return value;
      diagnostics.add(node.source(),
                      fmt::format("`{}` = {}: plugin options cannot hold nan or inf (JSON has "
                                  "no such numbers)",
                                  path, value));
      return nullptr;
    }
    case toml::node_type::boolean:
      return node.as_boolean()->get();
    case toml::node_type::date:
    case toml::node_type::time:
    case toml::node_type::date_time:
      diagnostics.add(node.source(), fmt::format("`{}` is {}: plugin options cannot hold dates "
                                                 "or times; write a string",
                                                 path, describe_type(node)));
      return nullptr;
    case toml::node_type::none:
      break;
  }
  return nullptr;
}

}  // namespace tessera::config_detail
