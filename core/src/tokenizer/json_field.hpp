// A value of a parsed JSON document together with its path ("model.merges[3]"), so that every
// error of the tokenizer.json reader names the field: "tok.json: model.merges[3]: expected ...".
#pragma once

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "util/check.hpp"

namespace tessera::tokenizer {

// A JSON value and where it sits in the file, so every error names the field.
class JsonField {
 public:
  JsonField(const nlohmann::json& value, std::string path, std::string_view origin)
      : value_(&value), path_(std::move(path)), origin_(origin) {}

  [[noreturn]] void fail(std::string_view what) const {
    if (path_.empty()) {
      throw Error(fmt::format("{}: {}", origin_, what));
    }
    throw Error(fmt::format("{}: {}: {}", origin_, path_, what));
  }
  const nlohmann::json& raw() const { return *value_; }
  const std::string& path() const { return path_; }
  bool is_null() const { return value_->is_null(); }

  std::optional<JsonField> find(std::string_view key) const {
    expect_object();
    auto it = value_->find(std::string(key));
    if (it == value_->end()) {
      return std::nullopt;
    }
    return JsonField(*it, child_path(key), origin_);
  }
  JsonField at(std::string_view key) const {
    auto f = find(key);
    if (!f) {
      fail(fmt::format("missing key \"{}\"", key));
    }
    return *f;
  }
  JsonField at(std::size_t index) const {
    return JsonField((*value_)[index], fmt::format("{}[{}]", path_, index), origin_);
  }
  std::size_t size() const { return value_->size(); }

  void expect_object() const {
    if (!value_->is_object()) {
      fail(fmt::format("expected an object, got {}", value_->type_name()));
    }
  }
  void expect_array() const {
    if (!value_->is_array()) {
      fail(fmt::format("expected an array, got {}", value_->type_name()));
    }
  }
  std::string string() const {
    if (!value_->is_string()) {
      fail(fmt::format("expected a string, got {}", value_->type_name()));
    }
    return value_->get<std::string>();
  }
  bool boolean() const {
    if (!value_->is_boolean()) {
      fail(fmt::format("expected true/false, got {}", value_->type_name()));
    }
    return value_->get<bool>();
  }
  int64_t integer() const {
    if (!value_->is_number_integer()) {
      fail(fmt::format("expected an integer, got {}", value_->type_name()));
    }
    return value_->get<int64_t>();
  }
  // Optional members: absent and null read as the default.
  bool boolean_or(std::string_view key, bool fallback) const {
    auto f = find(key);
    return f && !f->is_null() ? f->boolean() : fallback;
  }
  std::optional<std::string> string_or_null(std::string_view key) const {
    auto f = find(key);
    if (!f || f->is_null()) {
      return std::nullopt;
    }
    return f->string();
  }
  std::string type() const { return at("type").string(); }

 private:
  std::string child_path(std::string_view key) const {
    return path_.empty() ? std::string(key) : fmt::format("{}.{}", path_, key);
  }
  const nlohmann::json* value_;
  std::string path_;
  std::string_view origin_;
};

}  // namespace tessera::tokenizer
