#include "request_fields.hpp"

#include <fmt/format.h>

#include <cmath>
#include <utility>

#include "tessera/bounded_json.hpp"

namespace tessera::http {

void reject(std::string message, std::string param) {
  throw RequestError(bad_request(std::move(message), std::move(param)));
}

Json parse_json_object(std::string_view body, int max_depth) {
  // Linear in the body whatever its shape (tessera/bounded_json.hpp); the bounds are checked as
  // the value is built, before any field is looked at.
  sdk::JsonBounds bounds;
  bounds.max_depth = max_depth;
  sdk::BoundedJsonResult parsed = sdk::parse_bounded_json(body, bounds);
  if (parsed.limit == "max_depth") {
    reject(fmt::format("the body nests deeper than {} levels", max_depth));
  }
  if (!parsed.limit.empty())
    reject(fmt::format("the body is refused: {} ({})", parsed.error, parsed.limit));
  if (!parsed.ok()) reject(fmt::format("the body is not valid JSON: {}", parsed.error));
  if (!parsed.value.is_object()) {
    reject("the body must be a JSON object, got " + json_kind(parsed.value));
  }
  return std::move(parsed.value);
}

const Json* member(const Json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::int64_t int_member(const Json& object, std::string_view key, std::int64_t fallback) {
  const Json* v = member(object, key);
  if (v == nullptr) return fallback;
  if (v->is_number_integer()) return v->get<std::int64_t>();
  if (v->is_number_unsigned()) {
    const auto u = v->get<std::uint64_t>();
    return u > static_cast<std::uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<std::int64_t>(u);
  }
  return fallback;
}

double number_member(const Json& object, std::string_view key, double fallback) {
  const Json* v = member(object, key);
  return v != nullptr && v->is_number() ? v->get<double>() : fallback;
}

std::string string_member(const Json& object, std::string_view key) {
  const Json* v = member(object, key);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

std::string json_kind(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "integer";
    case Json::value_t::number_float:
      return "number";
    case Json::value_t::string:
      return "string";
    case Json::value_t::array:
      return "array";
    case Json::value_t::object:
      return "object";
    default:
      return "value";
  }
}

const Json* FieldReader::get(std::string_view key) const {
  const auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

bool FieldReader::has(std::string_view key) const { return get(key) != nullptr; }

std::optional<bool> FieldReader::boolean(std::string_view key) const {
  const Json* v = get(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_boolean()) {
    reject(fmt::format("'{}' must be a boolean, got {}", key, json_kind(*v)), std::string(key));
  }
  return v->get<bool>();
}

std::optional<std::string> FieldReader::string(std::string_view key) const {
  const Json* v = get(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) {
    reject(fmt::format("'{}' must be a string, got {}", key, json_kind(*v)), std::string(key));
  }
  return v->get<std::string>();
}

std::optional<double> FieldReader::number(std::string_view key, double lo, double hi,
                                          bool lo_open) const {
  const Json* v = get(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number()) {
    reject(fmt::format("'{}' must be a number, got {}", key, json_kind(*v)), std::string(key));
  }
  const double x = v->get<double>();
  const bool low_ok = lo_open ? x > lo : x >= lo;
  if (!std::isfinite(x) || !low_ok || x > hi) {
    reject(fmt::format("'{}' must be in {}{}, {}], got {}", key, lo_open ? "(" : "[", lo, hi,
                       v->dump()),
           std::string(key));
  }
  return x;
}

std::optional<std::int64_t> FieldReader::integer(std::string_view key, std::int64_t lo,
                                                 std::int64_t hi) const {
  const Json* v = get(key);
  if (v == nullptr) return std::nullopt;
  std::int64_t x = 0;
  if (v->is_number_integer()) {
    x = v->get<std::int64_t>();
  } else if (v->is_number_unsigned()) {
    const auto u = v->get<std::uint64_t>();
    x = u > static_cast<std::uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<std::int64_t>(u);
  } else if (v->is_number_float()) {
    const double d = v->get<double>();
    if (!std::isfinite(d) || std::trunc(d) != d || std::fabs(d) > 9.0e15) {
      reject(fmt::format("'{}' must be an integer, got {}", key, v->dump()), std::string(key));
    }
    x = static_cast<std::int64_t>(d);
  } else {
    reject(fmt::format("'{}' must be an integer, got {}", key, json_kind(*v)), std::string(key));
  }
  if (x < lo || x > hi) {
    reject(fmt::format("'{}' must be in [{}, {}], got {}", key, lo, hi, x), std::string(key));
  }
  return x;
}

std::vector<std::string> FieldReader::string_or_strings(std::string_view key, std::size_t max_count,
                                                        std::size_t max_bytes) const {
  const Json* v = get(key);
  std::vector<std::string> out;
  if (v == nullptr) return out;
  const auto take = [&](const Json& s) {
    if (!s.is_string()) {
      reject(fmt::format("'{}' must be a string or an array of strings", key), std::string(key));
    }
    auto text = s.get<std::string>();
    if (text.empty())
      reject(fmt::format("'{}' must not contain empty strings", key), std::string(key));
    if (text.size() > max_bytes) {
      reject(fmt::format("each '{}' string is at most {} bytes", key, max_bytes), std::string(key));
    }
    out.push_back(std::move(text));
  };
  if (v->is_array()) {
    if (v->size() > max_count) {
      reject(fmt::format("'{}' has {} entries; at most {} are allowed", key, v->size(), max_count),
             std::string(key));
    }
    for (const auto& s : *v) take(s);
  } else {
    take(*v);
  }
  return out;
}

std::vector<std::int64_t> FieldReader::integers(std::string_view key, std::size_t max_count,
                                                std::int64_t lo, std::int64_t hi) const {
  const Json* v = get(key);
  std::vector<std::int64_t> out;
  if (v == nullptr) return out;
  if (!v->is_array())
    reject(fmt::format("'{}' must be an array of integers", key), std::string(key));
  if (v->size() > max_count) {
    reject(fmt::format("'{}' has {} entries; at most {} are allowed", key, v->size(), max_count),
           std::string(key));
  }
  for (const auto& x : *v) {
    if (!x.is_number_integer() && !x.is_number_unsigned()) {
      reject(fmt::format("'{}' must be an array of integers", key), std::string(key));
    }
    const auto i = x.is_number_unsigned() && x.get<std::uint64_t>() > INT64_MAX
                       ? INT64_MAX
                       : x.get<std::int64_t>();
    if (i < lo || i > hi) {
      reject(fmt::format("'{}' values must be in [{}, {}], got {}", key, lo, hi, i),
             std::string(key));
    }
    out.push_back(i);
  }
  return out;
}

}  // namespace tessera::http
