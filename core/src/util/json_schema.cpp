#include "util/json_schema.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string_view>

#include "util/check.hpp"
#include "util/edit_distance.hpp"

namespace tessera::util {

using nlohmann::json;

// Schema problems are the plugin author's to fix: the message names the schema location, and the
// core's source position (what TS_CHECK would add) would only be noise.
#define SCHEMA_REQUIRE(cond, ...)                       \
  do {                                                  \
    if (!(cond)) throw Error(fmt::format(__VA_ARGS__)); \
  } while (0)

namespace {

constexpr std::array<std::string_view, 6> kTypes = {"object",  "string",  "number",
                                                    "integer", "boolean", "array"};
constexpr std::array<std::string_view, 20> kKeywords = {"type",
                                                        "properties",
                                                        "required",
                                                        "additionalProperties",
                                                        "enum",
                                                        "minimum",
                                                        "maximum",
                                                        "exclusiveMinimum",
                                                        "exclusiveMaximum",
                                                        "minItems",
                                                        "maxItems",
                                                        "items",
                                                        "default",
                                                        "$schema",
                                                        "$id",
                                                        "title",
                                                        "description",
                                                        "examples",
                                                        "$comment",
                                                        "deprecated"};

// Short rendering of a value for messages: long strings and objects are cut.
std::string show(const json& value) {
  std::string text = value.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

std::string join(const std::vector<std::string>& items, std::string_view quote) {
  std::string out;
  for (const std::string& item : items) {
    if (!out.empty()) out += ", ";
    out += fmt::format("{}{}{}", quote, item, quote);
  }
  return out;
}

std::vector<std::string> allowed_types(const json& schema) {
  std::vector<std::string> types;
  const auto it = schema.find("type");
  if (it == schema.end()) return types;
  if (it->is_string()) {
    types.push_back(it->get<std::string>());
  } else {
    for (const json& t : *it) types.push_back(t.get<std::string>());
  }
  return types;
}

bool matches_type(const json& value, std::string_view type) {
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "string") return value.is_string();
  if (type == "boolean") return value.is_boolean();
  if (type == "number") return value.is_number();
  if (type == "integer") {
    if (value.is_number_integer()) return true;
    // JSON Schema (draft 6+): 3.0 is an integer.
    if (!value.is_number_float()) return false;
    const double d = value.get<double>();
    return std::isfinite(d) && std::floor(d) == d;
  }
  return false;
}

// ------------------------------------------------------------------ schema compilation

void compile(const json& schema, const std::string& where);

void compile(const json& schema, const std::string& where) {
  SCHEMA_REQUIRE(schema.is_object(), "options schema at {}: expected a JSON object, got {}", where,
                 show(schema));
  for (const auto& [key, sub] : schema.items()) {
    const bool known =
        std::find(kKeywords.begin(), kKeywords.end(), std::string_view(key)) != kKeywords.end();
    if (!known) {
      const std::vector<std::string> names(kKeywords.begin(), kKeywords.end());
      const std::string guess = nearest(key, names);
      SCHEMA_REQUIRE(false, "options schema at {}: keyword `{}` is outside the supported subset{}",
                     where, key, guess.empty() ? "" : fmt::format(" (did you mean `{}`?)", guess));
    }
  }
  if (const auto it = schema.find("type"); it != schema.end()) {
    const auto check_one = [&](const json& t) {
      SCHEMA_REQUIRE(t.is_string() && std::find(kTypes.begin(), kTypes.end(),
                                                t.get<std::string_view>()) != kTypes.end(),
                     "options schema at {}/type: {} is not one of object, string, number, integer, "
                     "boolean, array",
                     where, show(t));
    };
    if (it->is_array()) {
      SCHEMA_REQUIRE(!it->empty(), "options schema at {}/type: empty list", where);
      for (const json& t : *it) check_one(t);
    } else {
      check_one(*it);
    }
  }
  if (const auto it = schema.find("properties"); it != schema.end()) {
    SCHEMA_REQUIRE(it->is_object(), "options schema at {}/properties: expected an object", where);
    for (const auto& [name, sub] : it->items()) compile(sub, where + "/properties/" + name);
  }
  if (const auto it = schema.find("required"); it != schema.end()) {
    SCHEMA_REQUIRE(it->is_array(), "options schema at {}/required: expected a list of key names",
                   where);
    for (const json& name : *it)
      SCHEMA_REQUIRE(name.is_string(), "options schema at {}/required: {} is not a key name", where,
                     show(name));
  }
  if (const auto it = schema.find("additionalProperties"); it != schema.end()) {
    SCHEMA_REQUIRE(it->is_boolean(),
                   "options schema at {}/additionalProperties: only true or false is supported",
                   where);
  }
  if (const auto it = schema.find("enum"); it != schema.end()) {
    SCHEMA_REQUIRE(it->is_array() && !it->empty(),
                   "options schema at {}/enum: expected a non-empty list", where);
  }
  for (const char* bound : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
    if (const auto it = schema.find(bound); it != schema.end())
      SCHEMA_REQUIRE(it->is_number(), "options schema at {}/{}: expected a number, got {}", where,
                     bound, show(*it));
  }
  for (const char* bound : {"minItems", "maxItems"}) {
    if (const auto it = schema.find(bound); it != schema.end())
      SCHEMA_REQUIRE(it->is_number_integer() && it->get<std::int64_t>() >= 0,
                     "options schema at {}/{}: expected a non-negative integer, got {}", where,
                     bound, show(*it));
  }
  if (const auto it = schema.find("items"); it != schema.end()) compile(*it, where + "/items");
}

// ------------------------------------------------------------------ validation

void check_number(const json& schema, const json& value, const std::string& path,
                  std::vector<SchemaViolation>& out) {
  const double v = value.get<double>();
  if (const auto it = schema.find("minimum"); it != schema.end() && v < it->get<double>())
    out.push_back({path, fmt::format("{} is below the minimum {}", show(value), show(*it))});
  if (const auto it = schema.find("maximum"); it != schema.end() && v > it->get<double>())
    out.push_back({path, fmt::format("{} is above the maximum {}", show(value), show(*it))});
  if (const auto it = schema.find("exclusiveMinimum"); it != schema.end() && v <= it->get<double>())
    out.push_back({path, fmt::format("{} must be greater than {}", show(value), show(*it))});
  if (const auto it = schema.find("exclusiveMaximum"); it != schema.end() && v >= it->get<double>())
    out.push_back({path, fmt::format("{} must be less than {}", show(value), show(*it))});
}

void check_value(const json& schema, const json& value, const std::string& path,
                 std::vector<SchemaViolation>& out);

void check_object(const json& schema, const json& value, const std::string& path,
                  std::vector<SchemaViolation>& out) {
  static const json kNoProperties = json::object();
  const auto props_it = schema.find("properties");
  const json& properties = props_it != schema.end() ? *props_it : kNoProperties;
  if (const auto it = schema.find("required"); it != schema.end()) {
    for (const json& name : *it) {
      const std::string key = name.get<std::string>();
      if (value.contains(key)) continue;
      const auto sub = properties.find(key);
      const std::vector<std::string> types =
          sub != properties.end() ? allowed_types(*sub) : std::vector<std::string>{};
      out.push_back({path, fmt::format("missing required key `{}`{}", key,
                                       types.empty() ? "" : " (" + join(types, "") + ")")});
    }
  }
  const auto extra_it = schema.find("additionalProperties");
  const bool closed = extra_it != schema.end() && !extra_it->get<bool>();
  for (const auto& [key, member] : value.items()) {
    const std::string member_path = path + "." + key;
    if (const auto sub = properties.find(key); sub != properties.end()) {
      check_value(*sub, member, member_path, out);
      continue;
    }
    if (!closed) continue;
    std::vector<std::string> names;
    for (const auto& [name, unused] : properties.items()) names.push_back(name);
    const std::string guess = nearest(key, names);
    std::string message = fmt::format("unknown key `{}`", key);
    if (!guess.empty())
      message += fmt::format(", did you mean `{}`?", guess);
    else if (names.empty())
      message += " (this table takes no keys)";
    else
      message += fmt::format(" (known keys: {})", join(names, "`"));
    out.push_back({member_path, message});
  }
}

void check_array(const json& schema, const json& value, const std::string& path,
                 std::vector<SchemaViolation>& out) {
  const auto size = static_cast<std::int64_t>(value.size());
  if (const auto it = schema.find("minItems"); it != schema.end() && size < it->get<std::int64_t>())
    out.push_back({path, fmt::format("has {} items, at least {} required", size, show(*it))});
  if (const auto it = schema.find("maxItems"); it != schema.end() && size > it->get<std::int64_t>())
    out.push_back({path, fmt::format("has {} items, at most {} allowed", size, show(*it))});
  if (const auto it = schema.find("items"); it != schema.end()) {
    for (std::size_t i = 0; i < value.size(); ++i)
      check_value(*it, value[i], fmt::format("{}[{}]", path, i), out);
  }
}

void check_value(const json& schema, const json& value, const std::string& path,
                 std::vector<SchemaViolation>& out) {
  const std::vector<std::string> types = allowed_types(schema);
  if (!types.empty() && std::none_of(types.begin(), types.end(), [&](const std::string& t) {
        return matches_type(value, t);
      })) {
    out.push_back({path, fmt::format("expected {}, got {} {}", join(types, ""),
                                     json_type_name(value), show(value))});
    return;  // further checks on a value of the wrong type only add noise
  }
  if (const auto it = schema.find("enum"); it != schema.end()) {
    if (std::find(it->begin(), it->end(), value) == it->end()) {
      std::vector<std::string> options;
      for (const json& option : *it) options.push_back(show(option));
      std::string message = fmt::format("{} is not one of {}", show(value), join(options, ""));
      if (value.is_string()) {
        std::vector<std::string> strings;
        for (const json& option : *it)
          if (option.is_string()) strings.push_back(option.get<std::string>());
        const std::string guess = nearest(value.get<std::string>(), strings);
        if (!guess.empty()) message += fmt::format("; did you mean \"{}\"?", guess);
      }
      out.push_back({path, message});
    }
  }
  if (value.is_number()) check_number(schema, value, path, out);
  if (value.is_object()) check_object(schema, value, path, out);
  if (value.is_array()) check_array(schema, value, path, out);
}

json fill_defaults(const json& schema, const json& value) {
  json result = value;
  if (result.is_object()) {
    const auto props = schema.find("properties");
    if (props == schema.end()) return result;
    for (const auto& [key, sub] : props->items()) {
      if (auto member = result.find(key); member != result.end()) {
        *member = fill_defaults(sub, *member);
      } else if (const auto def = sub.find("default"); def != sub.end()) {
        result[key] = *def;
      }
    }
  } else if (result.is_array()) {
    if (const auto items = schema.find("items"); items != schema.end())
      for (json& element : result) element = fill_defaults(*items, element);
  }
  return result;
}

void check_defaults(const json& schema, const std::string& where) {
  if (const auto def = schema.find("default"); def != schema.end()) {
    std::vector<SchemaViolation> violations;
    check_value(schema, *def, "default", violations);
    SCHEMA_REQUIRE(violations.empty(),
                   "options schema at {}: the default does not satisfy the schema: {}", where,
                   violations.front().to_string());
  }
  if (const auto props = schema.find("properties"); props != schema.end())
    for (const auto& [name, sub] : props->items())
      check_defaults(sub, where + "/properties/" + name);
  if (const auto items = schema.find("items"); items != schema.end())
    check_defaults(*items, where + "/items");
}

}  // namespace

std::string json_type_name(const json& value) {
  switch (value.type()) {
    case json::value_t::object:
      return "object";
    case json::value_t::array:
      return "array";
    case json::value_t::string:
      return "string";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "integer";
    case json::value_t::number_float:
      return "number";
    case json::value_t::null:
      return "null";
    default:
      return "value";
  }
}

JsonSchema::JsonSchema(json schema) : schema_(std::move(schema)) {
  compile(schema_, "#");
  check_defaults(schema_, "#");
}

JsonSchema JsonSchema::parse(const std::string& schema_text) {
  try {
    return JsonSchema(json::parse(schema_text));
  } catch (const json::parse_error& e) {
    throw Error(fmt::format("options schema is not valid JSON: {}", e.what()));
  }
}

std::vector<SchemaViolation> JsonSchema::validate(const json& value,
                                                  const std::string& root) const {
  std::vector<SchemaViolation> violations;
  check_value(schema_, value, root, violations);
  return violations;
}

void JsonSchema::require_valid(const json& value, const std::string& root) const {
  const std::vector<SchemaViolation> violations = validate(value, root);
  if (violations.empty()) return;
  std::string message;
  for (const SchemaViolation& v : violations) {
    if (!message.empty()) message += "\n";
    message += v.to_string();
  }
  throw Error(message);
}

json JsonSchema::with_defaults(const json& value) const { return fill_defaults(schema_, value); }

}  // namespace tessera::util
