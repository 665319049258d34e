// The configuration schema: every table and key of the TOML file, written once (the tables live
// in config_schema.cpp). The loader validates and applies defaults from it, docs/config.md is
// rendered from it (render_config_reference), and tests walk it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "config/config.hpp"

namespace tessera::config_schema {

// Where a key's value lands in Config. Captureless lambdas convert to these.
using StringField = std::string& (*)(Config&);
using IntegerField = std::int64_t& (*)(Config&);
using FloatField = double& (*)(Config&);
using BoolField = bool& (*)(Config&);
using StringListField = std::vector<std::string>& (*)(Config&);
using Field = std::variant<StringField, IntegerField, FloatField, BoolField, StringListField>;

struct Required {};
using DefaultValue = std::variant<Required, std::string_view, std::int64_t, double, bool,
                                  std::vector<std::string_view>>;

struct IntegerRange {
  std::int64_t min;
  std::int64_t max;
};

// [min, max], or (min, max] when min_exclusive.
struct FloatRange {
  double min;
  double max;
  bool min_exclusive = false;
};

struct KeySpec {
  std::string_view table;  // dotted table path: "model", "sampler.defaults"
  std::string_view key;
  Field field;
  DefaultValue default_value;
  std::optional<IntegerRange> integer_range;
  std::optional<FloatRange> float_range;
  std::vector<std::string_view> choices;  // allowed strings; empty: any non-empty string
  std::string_view doc;

  bool required() const { return std::holds_alternative<Required>(default_value); }
  std::string dotted_path() const;  // "sampler.defaults.top_p"
  std::string_view type_name()
      const;                         // "string", "integer", "float", "boolean", "array of strings"
  std::string default_text() const;  // as TOML: "\"cpu\"", "64", "[]", "(required)"
  std::string range_text() const;    // "[1, 8]", "(0, 1]", "\"cpu\" | \"cuda\"", "" if none
};

enum class TableKind {
  kFixed,         // only the keys and sub-tables listed in the schema
  kOptions,       // open table handed to a plugin as JSON ([kv_cache.options])
  kPluginEntries  // array of open tables, each naming its `plugin` ([[frontend]])
};

struct TableSpec {
  std::string_view path;  // "" is the root
  TableKind kind;
  StringField options_field;  // kOptions only: where the JSON text goes
  std::string_view doc;
};

const std::vector<TableSpec>& tables();
const std::vector<KeySpec>& keys();

const TableSpec* find_table(std::string_view path);
const KeySpec* find_key(std::string_view table, std::string_view key);
// Keys and direct sub-tables of `table`, in schema order (candidates for "did you mean").
std::vector<std::string> names_in_table(std::string_view table);

// Writes every default into `config` (required keys are left alone).
void apply_defaults(Config& config);

// Markdown reference of every table and key (the generated part of docs/config.md).
std::string render_config_reference();

}  // namespace tessera::config_schema
