// The TOML -> Config walker shared by config_loader.cpp (the schema tables, cross-key rules)
// and config_loader_ab.cpp (the [ab] arms). Internal to the config loader: include it only there.
#pragma once

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"
#include "config/config_diagnostics.hpp"
#include "config/config_schema.hpp"
#include "config/toml_preflight.hpp"
#include "config/toml_to_json.hpp"
#include "util/edit_distance.hpp"

namespace tessera::config_detail {

namespace schema = config_schema;

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

inline std::string join_path(std::string_view table, std::string_view key) {
  return table.empty() ? std::string(key) : fmt::format("{}.{}", table, key);
}

// "in [sampler.defaults]" / "" at the root.
inline std::string where_in(std::string_view table) {
  return table.empty() ? std::string() : fmt::format(" in [{}]", table);
}

inline std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates,
                                std::string_view quote) {
  const std::string suggestion = util::nearest(word, candidates);
  if (suggestion.empty()) {
    return "";
  }
  return fmt::format(", did you mean {}{}{}?", quote, suggestion, quote);
}
class ConfigLoader {
 public:
  explicit ConfigLoader(std::string_view source_name) : diagnostics_(std::string(source_name)) {
    config_ = default_config();
    config_.source_name = std::string(source_name);
  }

  Config load(const toml::table& root) {
    walk_fixed_table(root, "");
    check_required_keys();
    check_cross_key_rules();
    if (ab_node_ != nullptr) {
      read_ab(*ab_node_);  // arms start from the finished top level
    }
    diagnostics_.throw_if_any();
    return std::move(config_);
  }

 private:
  void walk_fixed_table(const toml::table& table, std::string_view path) {
    if (!path.empty()) {
      config_.locations[prefix_ + std::string(path)] = at(table.source());
    }
    for (const auto& [key, node] : table) {
      const std::string_view name = key.str();
      if (path.empty() && prefix_.empty() && name == "ab") {
        ab_node_ = &node;  // read last: each arm is the finished top level plus its own tables
        continue;
      }
      if (const schema::KeySpec* spec = schema::find_key(path, name)) {
        config_.locations[prefix_ + spec->dotted_path()] = at(key.source());
        read_value(*spec, node);
        continue;
      }
      // A quoted key holding a dot ("kv_cache.options" = {...}) is not a path into the schema.
      const schema::TableSpec* sub = name.find('.') == std::string_view::npos
                                         ? schema::find_table(join_path(path, name))
                                         : nullptr;
      if (sub != nullptr) {
        read_table(*sub, node);
        continue;
      }
      diagnostics_.add(key.source(),
                       fmt::format("unknown key `{}`{}{}", printable(name),
                                   where_in(prefix_ + std::string(path)),
                                   did_you_mean(name, schema::names_in_table(path), "`")));
    }
  }

  void read_table(const schema::TableSpec& spec, const toml::node& node) {
    if (spec.kind == schema::TableKind::kPluginEntries) {
      read_plugin_entries(spec, node);
      return;
    }
    const toml::table* table = node.as_table();
    const std::string path = prefix_ + std::string(spec.path);
    if (table == nullptr) {
      failed_.insert(path);
      diagnostics_.add(node.source(),
                       fmt::format("`{}` must be a table, got {}", path, describe_type(node)));
      return;
    }
    if (spec.kind == schema::TableKind::kFixed) {
      walk_fixed_table(*table, spec.path);
      return;
    }
    config_.locations[path] = at(table->source());
    spec.options_field(config_) = config_detail::toml_to_json(*table, path, diagnostics_).dump();
  }

  // [[frontend]]: each entry names its plugin; every other key is that plugin's option.
  void read_plugin_entries(const schema::TableSpec& spec, const toml::node& node) {
    const toml::array* entries = node.as_array();
    if (entries == nullptr) {
      diagnostics_.add(node.source(),
                       fmt::format("`{}` must be an array of tables (write [[{}]], not [{}]), "
                                   "got {}",
                                   spec.path, spec.path, spec.path, describe_type(node)));
      return;
    }
    std::size_t number = 0;
    for (const toml::node& element : *entries) {
      ++number;
      const toml::table* entry = element.as_table();
      if (entry == nullptr) {
        diagnostics_.add(element.source(), fmt::format("[[{}]] entry {} must be a table, got {}",
                                                       spec.path, number, describe_type(element)));
        continue;
      }
      FrontendSection frontend;
      frontend.table_location = diagnostics_.at(entry->source());
      frontend.plugin_location = frontend.table_location;
      nlohmann::json options = nlohmann::json::object();
      bool has_plugin = false;
      for (const auto& [key, value] : *entry) {
        const std::string entry_path = fmt::format("{}[{}]", spec.path, number);
        if (key.str() != "plugin") {
          options[std::string(key.str())] = config_detail::toml_to_json(
              value, fmt::format("{}.{}", entry_path, printable(key.str())), diagnostics_);
          continue;
        }
        has_plugin = true;
        frontend.plugin_location = diagnostics_.at(key.source());
        if (const auto* name = value.as_string(); name != nullptr && !name->get().empty()) {
          frontend.plugin = name->get();
        } else {
          diagnostics_.add(value.source(),
                           fmt::format("`plugin` in [[{}]] entry {} must be a non-empty string "
                                       "naming a plugin, got {}",
                                       spec.path, number, describe_type(value)));
        }
      }
      if (!has_plugin) {
        diagnostics_.add(
            entry->source(),
            fmt::format("missing required key `plugin` in [[{}]] entry {}", spec.path, number));
      }
      frontend.options_json = options.dump();
      config_.frontends.push_back(std::move(frontend));
    }
  }

  void read_value(const schema::KeySpec& spec, const toml::node& node) {
    const std::string path = prefix_ + spec.dotted_path();
    const auto wrong_type = [&](std::string_view expected) {
      failed_.insert(path);
      diagnostics_.add(node.source(),
                       fmt::format("`{}` must be {}, got {}", path, expected, describe_type(node)));
    };
    std::visit(Overloaded{
                   [&](schema::StringField field) {
                     const auto* value = node.as_string();
                     if (value == nullptr) {
                       return wrong_type("a string");
                     }
                     if (check_string(spec, path, *value)) {
                       field(config_) = value->get();
                     }
                   },
                   [&](schema::IntegerField field) {
                     const auto* value = node.as_integer();
                     if (value == nullptr) {
                       return wrong_type("an integer");
                     }
                     if (check_integer(spec, path, *value)) {
                       field(config_) = value->get();
                     }
                   },
                   [&](schema::FloatField field) {
                     // An integer is a fine float (temperature = 1).
                     if (!node.is_number()) {
                       return wrong_type("a float");
                     }
                     const double value = node.is_integer()
                                              ? static_cast<double>(node.as_integer()->get())
                                              : node.as_floating_point()->get();
                     if (check_float(spec, path, node, value)) {
                       field(config_) = value;
                     }
                   },
                   [&](schema::BoolField field) {
                     const auto* value = node.as_boolean();
                     if (value == nullptr) {
                       return wrong_type("a boolean (true or false)");
                     }
                     field(config_) = value->get();
                   },
                   [&](schema::StringListField field) {
                     const auto* array = node.as_array();
                     if (array == nullptr) {
                       return wrong_type("an array of strings");
                     }
                     read_string_list(path, *array, field(config_));
                   },
               },
               spec.field);
  }

  bool check_string(const schema::KeySpec& spec, const std::string& path,
                    const toml::value<std::string>& value) {
    const std::string& text = value.get();
    if (text.empty()) {
      failed_.insert(path);
      diagnostics_.add(value.source(), fmt::format("`{}` must not be empty", path));
      return false;
    }
    if (spec.choices.empty()) {
      return true;
    }
    for (std::string_view allowed : spec.choices) {
      if (allowed == text) {
        return true;
      }
    }
    failed_.insert(path);
    const std::vector<std::string> candidates(spec.choices.begin(), spec.choices.end());
    diagnostics_.add(value.source(),
                     fmt::format("`{}` must be one of {}, got \"{}\"{}", path, spec.range_text(),
                                 printable(text), did_you_mean(text, candidates, "\"")));
    return false;
  }

  bool check_integer(const schema::KeySpec& spec, const std::string& path,
                     const toml::value<std::int64_t>& value) {
    const std::int64_t v = value.get();
    if (!spec.integer_range || (v >= spec.integer_range->min && v <= spec.integer_range->max)) {
      return true;
    }
    failed_.insert(path);
    diagnostics_.add(value.source(),
                     fmt::format("`{}` = {} is out of range {}", path, v, spec.range_text()));
    return false;
  }

  bool check_float(const schema::KeySpec& spec, const std::string& path, const toml::node& node,
                   double v) {
    if (!spec.float_range) {
      return true;
    }
    const schema::FloatRange& r = *spec.float_range;
    // Written so that NaN fails every comparison and lands in the error branch.
    const bool above_min = r.min_exclusive ? v > r.min : v >= r.min;
    if (above_min && v <= r.max) {
      return true;
    }
    failed_.insert(path);
    diagnostics_.add(node.source(),
                     fmt::format("`{}` = {} is out of range {}", path, v, spec.range_text()));
    return false;
  }

  void read_string_list(const std::string& path, const toml::array& array,
                        std::vector<std::string>& out) {
    std::vector<std::string> values;
    std::size_t index = 0;
    for (const toml::node& element : array) {
      const auto* text = element.as_string();
      if (text == nullptr || text->get().empty()) {
        failed_.insert(path);
        diagnostics_.add(element.source(),
                         fmt::format("`{}[{}]` must be a non-empty string, got {}", path, index,
                                     text ? "an empty string" : describe_type(element)));
      } else {
        values.push_back(text->get());
      }
      ++index;
    }
    out = std::move(values);
  }

  void check_required_keys() {
    for (const schema::KeySpec& spec : schema::keys()) {
      if (!spec.required() || config_.locations.count(spec.dotted_path())) {
        continue;
      }
      if (failed_.count(std::string(spec.table))) {
        continue;  // already reported: not a table
      }
      diagnostics_.add(
          config_.location_of(spec.table),
          fmt::format("missing required key `{}` in [{}] ({})", spec.key, spec.table, spec.doc));
    }
  }

  // `small` must not exceed `large`. When the file left `small` to its default, the default
  // follows `large` down (a lowered limit drags the defaults below it along); when the file wrote
  // both, the contradiction is an error at the `small` key.
  // Inside an [ab] arm, `small` is the arm's key (prefix_) and `large` the shared one.
  void require_at_most(std::string_view small_key, std::int64_t& small, std::string_view large_path,
                       std::int64_t large) {
    if (small <= large) {
      return;
    }
    const std::string small_path = prefix_ + std::string(small_key);
    if (failed_.count(small_path) || failed_.count(large_path)) {
      return;
    }
    if (!config_.locations.count(small_path)) {
      small = large;
      return;
    }
    diagnostics_.add(
        config_.location_of(small_path),
        fmt::format("`{}` = {} must not exceed `{}` = {}", small_path, small, large_path, large));
  }

  // Ordered so that clamped values propagate: context -> limits -> sampler defaults.
  void check_cross_key_rules() {
    Config& c = config_;
    require_at_most("limits.max_tokens", c.limits.max_tokens, "model.max_context",
                    c.model.max_context);
    require_at_most("sampler.defaults.max_tokens", c.sampler.defaults.max_tokens,
                    "limits.max_tokens", c.limits.max_tokens);
    require_at_most("generation.min_answer_tokens", c.generation.min_answer_tokens,
                    "limits.max_tokens", c.limits.max_tokens);
    // Every running sequence decodes one token per step, so a step must hold them all.
    require_at_most("scheduler.max_running_sequences", c.scheduler.max_running_sequences,
                    "scheduler.max_batched_tokens", c.scheduler.max_batched_tokens);
    require_at_most("scheduler.chunked_prefill_size", c.scheduler.chunked_prefill_size,
                    "scheduler.max_batched_tokens", c.scheduler.max_batched_tokens);
  }

  SourceLocation at(const toml::source_region& where) const { return diagnostics_.at(where); }

  // [ab] (config_loader_ab.cpp): each arm is the finished top level plus its own tables.
  void read_ab(const toml::node& node);
  void check_arm_names(const std::vector<std::string>& names);
  AbArm read_arm(const std::string& name, const toml::node* node);

  Config config_;
  DiagnosticCollector diagnostics_;
  std::set<std::string, std::less<>> failed_;  // keys/tables already reported
  std::string prefix_;                         // "ab.<arm>." while reading an arm's tables
  const toml::node* ab_node_ = nullptr;
};

}  // namespace tessera::config_detail
