// Queries over the schema tables (config_schema.cpp): lookup, defaults, and how a key describes
// itself in messages and docs.
#include <fmt/format.h>

#include <cmath>

#include "config/config_schema.hpp"

namespace tessera::config_schema {

namespace {

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

std::string parent_of(std::string_view path) {
  const auto dot = path.rfind('.');
  return dot == std::string_view::npos ? std::string() : std::string(path.substr(0, dot));
}

std::string last_component(std::string_view path) {
  const auto dot = path.rfind('.');
  return std::string(dot == std::string_view::npos ? path : path.substr(dot + 1));
}

// TOML spelling of a float: always with a fraction or exponent, so it reads as a float.
std::string float_text(double value) {
  std::string text = fmt::format("{}", value);
  if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
  return text;
}

}  // namespace

std::string KeySpec::dotted_path() const { return fmt::format("{}.{}", table, key); }

std::string_view KeySpec::type_name() const {
  static constexpr std::string_view kNames[] = {"string", "integer", "float", "boolean",
                                                "array of strings"};
  return kNames[field.index()];
}

std::string KeySpec::default_text() const {
  return std::visit(Overloaded{
                        [](Required) { return std::string("(required)"); },
                        [](std::string_view s) { return fmt::format("\"{}\"", s); },
                        [](std::int64_t i) { return fmt::format("{}", i); },
                        [](double d) { return float_text(d); },
                        [](bool b) { return std::string(b ? "true" : "false"); },
                        [](const std::vector<std::string_view>& list) {
                          std::string out = "[";
                          for (std::size_t i = 0; i < list.size(); ++i)
                            out += fmt::format("{}\"{}\"", i ? ", " : "", list[i]);
                          return out + "]";
                        },
                    },
                    default_value);
}

std::string KeySpec::range_text() const {
  if (integer_range) return fmt::format("[{}, {}]", integer_range->min, integer_range->max);
  if (float_range)
    return fmt::format("{}{}, {}]", float_range->min_exclusive ? "(" : "[",
                       float_text(float_range->min), float_text(float_range->max));
  std::string out;
  for (std::size_t i = 0; i < choices.size(); ++i)
    out += fmt::format("{}\"{}\"", i ? " | " : "", choices[i]);
  return out;
}

const TableSpec* find_table(std::string_view path) {
  for (const TableSpec& table : tables())
    if (table.path == path) return &table;
  return nullptr;
}

const KeySpec* find_key(std::string_view table, std::string_view key) {
  for (const KeySpec& spec : keys())
    if (spec.table == table && spec.key == key) return &spec;
  return nullptr;
}

std::vector<std::string> names_in_table(std::string_view table) {
  std::vector<std::string> names;
  for (const KeySpec& spec : keys())
    if (spec.table == table) names.emplace_back(spec.key);
  for (const TableSpec& sub : tables())
    if (parent_of(sub.path) == table) names.push_back(last_component(sub.path));
  return names;
}

void apply_defaults(Config& config) {
  for (const KeySpec& spec : keys()) {
    std::visit(Overloaded{
                   [&](StringField f) {
                     if (const auto* s = std::get_if<std::string_view>(&spec.default_value))
                       f(config) = std::string(*s);
                   },
                   [&](IntegerField f) { f(config) = std::get<std::int64_t>(spec.default_value); },
                   [&](FloatField f) { f(config) = std::get<double>(spec.default_value); },
                   [&](BoolField f) { f(config) = std::get<bool>(spec.default_value); },
                   [&](StringListField f) {
                     const auto& list = std::get<std::vector<std::string_view>>(spec.default_value);
                     f(config).assign(list.begin(), list.end());
                   },
               },
               spec.field);
  }
  for (const TableSpec& table : tables())
    if (table.kind == TableKind::kOptions) table.options_field(config) = "{}";
}

}  // namespace tessera::config_schema
