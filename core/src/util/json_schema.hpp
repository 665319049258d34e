// A small JSON-Schema subset for plugin options (docs/plugins.md lists it). Plugins
// describe their options with it; the host validates a request's options before
// check_support/create so a typo or a wrong type is refused by the core with a message naming the
// key, never by the plugin.
//
// Supported keywords:
//   type: "object" | "string" | "number" | "integer" | "boolean" | "array" (or a list of them)
//   properties, required, additionalProperties (boolean; false => unknown keys are errors with a
//   "did you mean" suggestion), enum, minimum, maximum, exclusiveMinimum, exclusiveMaximum
//   (numbers, draft 6 style), minItems, maxItems, items (one schema for every element), default
//   Annotations, accepted and ignored: $schema, $id, title, description, examples.
// Anything else in a schema is refused when the schema is compiled, so a plugin author learns at
// load time that `pattern` would not be enforced rather than believing it is.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tessera::util {

// One reason a value does not match: `path` like "options.bias_tokens[2]" and a sentence.
struct SchemaViolation {
  std::string path;
  std::string message;
  [[nodiscard]] std::string to_string() const { return path + ": " + message; }
};

class JsonSchema {
 public:
  // Checks that `schema` stays inside the subset (and that its defaults satisfy it); throws
  // tessera::Error naming the schema location otherwise.
  explicit JsonSchema(nlohmann::json schema);
  // Parses then compiles; a JSON syntax error is reported with its byte offset.
  [[nodiscard]] static JsonSchema parse(const std::string& schema_text);

  // Every violation of `value`, depth first, in document order; empty when valid. `root` names
  // the value in messages ("options", "sampler.options").
  [[nodiscard]] std::vector<SchemaViolation> validate(const nlohmann::json& value,
                                                      const std::string& root = "options") const;

  // Throws tessera::Error listing every violation (one per line) unless `value` is valid.
  void require_valid(const nlohmann::json& value, const std::string& root = "options") const;

  // `value` with absent object properties filled from their schema's `default`, recursively.
  // Call after validate: it does not check anything.
  [[nodiscard]] nlohmann::json with_defaults(const nlohmann::json& value) const;

  [[nodiscard]] const nlohmann::json& document() const noexcept { return schema_; }

 private:
  nlohmann::json schema_;
};

// "integer", "string", ... : the schema type name of a JSON value (integral floats are "number").
[[nodiscard]] std::string json_type_name(const nlohmann::json& value);

}  // namespace tessera::util
