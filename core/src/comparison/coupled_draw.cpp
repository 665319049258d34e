#include "comparison/coupled_draw.hpp"

#include <nlohmann/json.hpp>

namespace tessera::ab {

std::string with_coupled_draw(const std::string& plugin, const std::string& options_json) {
  if (plugin != "standard") return options_json;
  nlohmann::json options = options_json.empty()
                               ? nlohmann::json::object()
                               : nlohmann::json::parse(options_json, nullptr, false);
  if (!options.is_object() || options.contains("draw")) return options_json;  // the plugin judges
  options["draw"] = kCoupledDraw;
  return options.dump();
}

}  // namespace tessera::ab
