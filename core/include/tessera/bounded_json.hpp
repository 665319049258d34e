// Header-only parse of untrusted JSON (request bodies, frontend-to-engine requests) into
// nlohmann::ordered_json in time linear in the input, with limits on nesting, keys per object and
// elements per array.
//
// Why not ordered_json::parse: its object insert scans the keys already there for a duplicate, so
// an object of n keys costs O(n^2) (100,000 keys in a 1.2 MB body took ~7 s of one thread). Here
// a small object is still scanned (at most kScanKeys compares per key), a larger one gets a hash
// index of its keys. Key order is kept (tool schemas are rendered in request order); a repeated
// key keeps its first position and takes the last value, as ordered_json::parse does.
#pragma once

#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tessera::sdk {

struct JsonBounds {
  int max_depth = 64;                            // nested objects and arrays
  std::size_t max_object_keys = 1024;            // distinct keys in one object
  std::size_t max_array_elements = 1024 * 1024;  // elements in one array (token id prompts)
};

// The outcome of parse_bounded_json: a value, or why there is none. `limit` names the bound that
// was hit ("max_depth", "max_object_keys", "max_array_elements"), empty for a syntax error.
struct BoundedJsonResult {
  nlohmann::ordered_json value;
  std::string error;  // empty when value holds the parsed document
  std::string limit;
  [[nodiscard]] bool ok() const noexcept { return error.empty(); }
  // The error, followed by the bound's name in parentheses when a bound was hit.
  [[nodiscard]] std::string message() const {
    return limit.empty() ? error : error + " (" + limit + ")";
  }
};

namespace bounded_json_detail {

using Json = nlohmann::ordered_json;

// Builds the document from nlohmann's SAX events. Pointers into parent containers stay valid
// because a parent is not appended to while one of its children is open.
class Builder {
 public:
  // ordered_map hides the vector's operator[] behind its key lookup.
  template <class Object>
  static auto& entry(Object& object, std::size_t i) {
    return *(object.begin() + static_cast<std::ptrdiff_t>(i));
  }

  explicit Builder(const JsonBounds& bounds) : bounds_(bounds) {}

  bool null() { return put(Json(nullptr)); }
  bool boolean(bool v) { return put(Json(v)); }
  bool number_integer(Json::number_integer_t v) { return put(Json(v)); }
  bool number_unsigned(Json::number_unsigned_t v) { return put(Json(v)); }
  bool number_float(Json::number_float_t v, const std::string&) { return put(Json(v)); }
  bool string(std::string& v) { return put(Json(std::move(v))); }
  bool binary(Json::binary_t& v) { return put(Json(std::move(v))); }

  bool start_object(std::size_t) { return open(Json::object()); }
  bool start_array(std::size_t) { return open(Json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(std::string& k) {
    Frame& f = frames_.back();
    auto& object = f.value->get_ref<Json::object_t&>();
    if (const std::size_t at = find_key(f, object, k); at != kAbsent) {
      f.slot =
          &entry(object, at).second;  // a repeated key: the last value wins, first position kept
      return true;
    }
    if (object.size() >= bounds_.max_object_keys) {
      return fail("max_object_keys",
                  "an object has more than " + std::to_string(bounds_.max_object_keys) + " keys");
    }
    if (f.index) f.index->emplace(k, object.size());
    object.Container::emplace_back(std::move(k), Json());
    f.slot = &object.back().second;
    if (!f.index && object.size() > kScanKeys) build_index(f, object);
    return true;
  }

  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    if (error_.empty()) error_ = e.what();
    return false;
  }

  [[nodiscard]] Json take() { return std::move(root_); }
  [[nodiscard]] const std::string& error() const { return error_; }
  [[nodiscard]] const std::string& limit() const { return limit_; }

 private:
  static constexpr std::size_t kScanKeys = 16;
  static constexpr std::size_t kAbsent = static_cast<std::size_t>(-1);

  struct Frame {
    Json* value = nullptr;  // the open object or array
    Json* slot = nullptr;   // an object's member whose value comes next
    std::unique_ptr<std::unordered_map<std::string, std::size_t>> index;  // key -> position
  };

  static std::size_t find_key(const Frame& f, const Json::object_t& object, const std::string& k) {
    if (f.index) {
      const auto it = f.index->find(k);
      return it == f.index->end() ? kAbsent : it->second;
    }
    for (std::size_t i = 0; i < object.size(); ++i) {
      if (entry(object, i).first == k) return i;
    }
    return kAbsent;
  }

  static void build_index(Frame& f, const Json::object_t& object) {
    f.index = std::make_unique<std::unordered_map<std::string, std::size_t>>();
    f.index->reserve(object.size() * 2);
    for (std::size_t i = 0; i < object.size(); ++i) f.index->emplace(entry(object, i).first, i);
  }

  // Stores a value where the grammar says it goes; returns where it landed through `placed`.
  bool put(Json&& v, Json** placed = nullptr) {
    Json* at = nullptr;
    if (frames_.empty()) {
      root_ = std::move(v);
      at = &root_;
    } else if (Frame& f = frames_.back(); f.value->is_array()) {
      auto& array = f.value->get_ref<Json::array_t&>();
      if (array.size() >= bounds_.max_array_elements) {
        return fail(
            "max_array_elements",
            "an array has more than " + std::to_string(bounds_.max_array_elements) + " elements");
      }
      array.push_back(std::move(v));
      at = &array.back();
    } else {
      *f.slot = std::move(v);
      at = f.slot;
    }
    if (placed != nullptr) *placed = at;
    return true;
  }

  bool open(Json&& empty) {
    if (frames_.size() >= static_cast<std::size_t>(bounds_.max_depth)) {
      return fail("max_depth",
                  "the JSON nests deeper than " + std::to_string(bounds_.max_depth) + " levels");
    }
    Json* placed = nullptr;
    if (!put(std::move(empty), &placed)) return false;
    frames_.push_back(Frame{placed, nullptr, nullptr});
    return true;
  }

  bool close() {
    frames_.pop_back();
    return true;
  }

  bool fail(const char* limit, std::string message) {
    limit_ = limit;
    error_ = std::move(message);
    return false;
  }

  const JsonBounds& bounds_;
  Json root_;
  std::vector<Frame> frames_;
  std::string error_;
  std::string limit_;
};

}  // namespace bounded_json_detail

// Parses `text` as one JSON document (no comments, nothing after it). Never throws for bad input.
[[nodiscard]] inline BoundedJsonResult parse_bounded_json(std::string_view text,
                                                          const JsonBounds& bounds = {}) {
  BoundedJsonResult result;
  bounded_json_detail::Builder builder(bounds);
  bool ok = false;
  try {
    ok = nlohmann::ordered_json::sax_parse(text.begin(), text.end(), &builder,
                                           nlohmann::ordered_json::input_format_t::json,
                                           /*strict=*/true, /*ignore_comments=*/false);
  } catch (const std::exception& e) {  // allocation failure, or a SAX path that throws
    result.error = e.what();
    return result;
  }
  if (!ok) {
    result.error = builder.error().empty() ? "invalid JSON" : builder.error();
    result.limit = builder.limit();
    return result;
  }
  result.value = builder.take();
  return result;
}

}  // namespace tessera::sdk
