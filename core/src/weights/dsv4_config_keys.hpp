// Typed access to one object of a JSON configuration file (config.json) where every error names
// the file and the dotted key path ("config.json: key 'rope_parameters.compress.factor': must be a
// number, got \"16\""). A key set to null counts as absent, as transformers writes null for "use
// the default".
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "util/check.hpp"

namespace tessera::dsv4 {

// Typed, path-naming access to one JSON object (see the file comment).
class ConfigKeys {
  using json = nlohmann::json;

 public:
  ConfigKeys(const json& object, std::string source, std::string prefix = "")
      : object_(object), source_(std::move(source)), prefix_(std::move(prefix)) {}

  [[noreturn]] void fail(std::string_view key, const std::string& why) const {
    throw Error(fmt::format("{}: key '{}{}': {}", source_, prefix_, key, why));
  }
  // A key set to null counts as absent (transformers writes null for "use the default").
  const json* find(std::string_view key) const {
    const auto it = object_.find(key);
    return it == object_.end() || it->is_null() ? nullptr : &*it;
  }
  bool has(std::string_view key) const { return find(key) != nullptr; }

  int64_t integer(std::string_view key) const {
    const json* v = find(key);
    if (v == nullptr) {
      fail(key, "is required");
    }
    return to_integer(key, *v);
  }
  int64_t integer(std::string_view key, int64_t fallback) const {
    return has(key) ? integer(key) : fallback;
  }
  int64_t to_integer(std::string_view key, const json& v) const {
    if (v.is_number_integer()) {
      return v.get<int64_t>();
    }
    if (v.is_number_float() && std::nearbyint(v.get<double>()) == v.get<double>() &&
        std::abs(v.get<double>()) < 9e15) {
      return static_cast<int64_t>(v.get<double>());
    }
    fail(key, fmt::format("must be an integer, got {}", v.dump()));
  }
  double number(std::string_view key, double fallback) const {
    const json* v = find(key);
    if (v == nullptr) {
      return fallback;
    }
    if (!v->is_number()) {
      fail(key, fmt::format("must be a number, got {}", v->dump()));
    }
    return v->get<double>();
  }
  bool boolean(std::string_view key, bool fallback) const {
    const json* v = find(key);
    if (v == nullptr) {
      return fallback;
    }
    if (!v->is_boolean()) {
      fail(key, fmt::format("must be true or false, got {}", v->dump()));
    }
    return v->get<bool>();
  }
  std::string string(std::string_view key, const std::string& fallback) const {
    const json* v = find(key);
    if (v == nullptr) {
      return fallback;
    }
    if (!v->is_string()) {
      fail(key, fmt::format("must be a string, got {}", v->dump()));
    }
    return v->get<std::string>();
  }
  const json& array(std::string_view key) const {
    const json* v = find(key);
    if (v == nullptr || !v->is_array()) {
      fail(key, "must be a list");
    }
    return *v;
  }
  ConfigKeys object(std::string_view key) const {
    const json* v = find(key);
    if (v == nullptr || !v->is_object()) {
      fail(key, "must be an object");
    }
    return ConfigKeys(*v, source_, fmt::format("{}{}.", prefix_, key));
  }
  bool is_object(std::string_view key) const {
    const json* v = find(key);
    return v != nullptr && v->is_object();
  }
  const std::string& source() const { return source_; }

 private:
  const json& object_;
  std::string source_;
  std::string prefix_;
};

}  // namespace tessera::dsv4
