// ConfigLoader's [ab] part (docs/ab.md, live A/B): the arm names, then each arm as the top-level
// plugin tables with the arm's own written over them, every mistake at its file:line:col.
#include "config/config_loader.hpp"

namespace tessera::config_detail {

void ConfigLoader::read_ab(const toml::node& node) {
  const toml::table* table = node.as_table();
  if (table == nullptr) {
    diagnostics_.add(node.source(),
                     fmt::format("`ab` must be a table, got {}", describe_type(node)));
    return;
  }
  config_.locations["ab"] = at(table->source());
  for (const auto& [key, value] : *table) {  // its own keys first: they name the arms
    if (const schema::KeySpec* spec = schema::find_key("ab", key.str())) {
      config_.locations[spec->dotted_path()] = at(key.source());
      read_value(*spec, value);
    }
  }
  const std::vector<std::string> names =
      config_.ab.arm_names;  // a copy: read_arm reassigns config_
  check_arm_names(names);
  std::vector<std::string> allowed = schema::names_in_table("ab");
  allowed.insert(allowed.end(), names.begin(), names.end());
  for (const auto& [key, value] : *table) {
    const std::string_view name = key.str();
    if (schema::find_key("ab", name) != nullptr ||
        std::find(names.begin(), names.end(), name) != names.end()) {
      continue;
    }
    diagnostics_.add(key.source(),
                     fmt::format("unknown key `{}` in [ab] (an arm's table needs its name in "
                                 "`ab.arms`){}",
                                 printable(name), did_you_mean(name, allowed, "`")));
  }
  if (failed_.count("ab.arms")) {
    return;
  }
  double total_weight = 0;
  for (const std::string& name : names) {
    config_.ab.arms.push_back(read_arm(name, table->get(name)));
    total_weight += config_.ab.arms.back().weight;
  }
  if (!names.empty() && !(total_weight > 0)) {
    diagnostics_.add(config_.location_of("ab"),
                     "the weights of the [ab] arms sum to 0: no arm would get traffic");
  }
}

void ConfigLoader::check_arm_names(const std::vector<std::string>& names) {
  const auto fail = [&](std::string message) {
    failed_.insert("ab.arms");
    diagnostics_.add(config_.location_of("ab.arms"), std::move(message));
  };
  if (names.size() == 1) {
    return fail("`ab.arms` needs at least two arms (or none, to turn A/B off)");
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string& n = names[i];
    const bool valid =
        n.size() <= 32 && std::all_of(n.begin(), n.end(), [](char c) {
          return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
        });
    if (!valid) {
      return fail(
          fmt::format("arm name \"{}\" in `ab.arms` must be 1-32 characters of "
                      "a-z, 0-9, _ and -",
                      printable(n)));
    }
    if (std::find(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(i), n) !=
        names.begin() + static_cast<std::ptrdiff_t>(i)) {
      return fail(fmt::format("arm \"{}\" is named twice in `ab.arms`", n));
    }
  }
}

// The top-level plugin tables with [ab.<name>]'s written over them.
AbArm ConfigLoader::read_arm(const std::string& name, const toml::node* node) {
  AbArm arm{name, 1.0, config_.kv_cache, config_.attention, config_.sampler};
  if (node == nullptr) {
    return arm;
  }
  const toml::table* table = node->as_table();
  if (table == nullptr) {
    diagnostics_.add(node->source(),
                     fmt::format("`ab.{}` must be a table, got {}", name, describe_type(*node)));
    return arm;
  }
  Config top = config_;
  prefix_ = fmt::format("ab.{}.", name);
  config_.locations["ab." + name] = at(table->source());
  Config defaults = default_config();  // non-const: the schema's accessors take Config&
  for (const auto& [key, value] : *table) {
    const std::string_view k = key.str();
    if (k == "weight") {
      const double w = value.is_integer()          ? static_cast<double>(value.as_integer()->get())
                       : value.is_floating_point() ? value.as_floating_point()->get()
                                                   : -1.0;
      if (w >= 0 && std::isfinite(w)) {
        arm.weight = w;
      } else {
        diagnostics_.add(value.source(),
                         fmt::format("`ab.{}.weight` must be a finite number >= 0, got {}", name,
                                     value.is_number() ? "a negative or infinite number"
                                                       : describe_type(value)));
      }
    } else if (k == "kv_cache" || k == "attention" || k == "sampler") {
      // Another plugin than the top level's: its options start from the defaults. The schema
      // knows where each table's `plugin` and `options` live in Config.
      const std::string table(k);
      const auto plugin_of =
          std::get<schema::StringField>(schema::find_key(table, "plugin")->field);
      const auto options_of = schema::find_table(table + ".options")->options_field;
      const auto* sub = value.as_table();
      const auto* plugin = sub != nullptr ? sub->get_as<std::string>("plugin") : nullptr;
      if (plugin != nullptr && plugin->get() != plugin_of(config_)) {
        options_of(config_) = options_of(defaults);
      }
      read_table(*schema::find_table(k), value);
    } else {
      diagnostics_.add(
          key.source(),
          fmt::format("unknown key `{}` in [ab.{}]{}", printable(k), name,
                      did_you_mean(k, {"weight", "kv_cache", "attention", "sampler"}, "`")));
    }
  }
  require_at_most("sampler.defaults.max_tokens", config_.sampler.defaults.max_tokens,
                  "limits.max_tokens", config_.limits.max_tokens);
  arm.kv_cache = config_.kv_cache;
  arm.attention = config_.attention;
  arm.sampler = config_.sampler;
  auto locations = std::move(config_.locations);
  config_ = std::move(top);
  config_.locations = std::move(locations);
  prefix_.clear();
  return arm;
}

}  // namespace tessera::config_detail
