// The options-schema subset: each keyword accepts what it should, refuses what it should, and the
// refusal names the key path and the expected type or range.
#include "util/json_schema.hpp"

#include <gtest/gtest.h>

#include "util/check.hpp"
#include "util/edit_distance.hpp"

namespace {

using nlohmann::json;
using tessera::util::JsonSchema;
using tessera::util::SchemaViolation;

const JsonSchema& sampler_schema() {
  static const JsonSchema schema = JsonSchema::parse(R"({
    "type": "object",
    "additionalProperties": false,
    "required": ["mode"],
    "properties": {
      "mode": {"type": "string", "enum": ["greedy", "random"]},
      "temperature": {"type": "number", "minimum": 0, "maximum": 2, "default": 1.0},
      "top_k": {"type": "integer", "minimum": 0, "default": 0},
      "top_p": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
      "verbose": {"type": "boolean", "default": false},
      "bias_tokens": {"type": "array", "items": {"type": "integer", "minimum": 0}, "maxItems": 3},
      "nested": {"type": "object", "additionalProperties": false,
                 "properties": {"depth": {"type": "integer", "default": 2}}}
    }
  })");
  return schema;
}

std::vector<SchemaViolation> check(const std::string& text) {
  return sampler_schema().validate(json::parse(text), "sampler.options");
}

TEST(EditDistance, CountsTranspositionAsOneEdit) {
  EXPECT_EQ(tessera::util::edit_distance("tpo_k", "top_k"), 1u);
  EXPECT_EQ(tessera::util::edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(tessera::util::edit_distance("", "abc"), 3u);
  EXPECT_EQ(tessera::util::nearest("temprature", {"top_k", "temperature"}), "temperature");
  EXPECT_EQ(tessera::util::nearest("zzzzzz", {"top_k", "temperature"}), "");
  EXPECT_EQ(tessera::util::nearest("anything", {}), "");
}

TEST(JsonSchema, AcceptsAValidDocument) {
  EXPECT_TRUE(check(R"({"mode": "greedy", "temperature": 0.7, "top_k": 40, "top_p": 0.9,
                        "verbose": true, "bias_tokens": [1, 2], "nested": {"depth": 3}})")
                  .empty());
  // JSON Schema draft 6+: an integral float is an integer.
  EXPECT_TRUE(check(R"({"mode": "greedy", "top_k": 40.0})").empty());
}

TEST(JsonSchema, UnknownKeyNamesThePathAndSuggestsTheNearest) {
  const auto v = check(R"({"mode": "greedy", "temprature": 0.5})");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].path, "sampler.options.temprature");
  EXPECT_EQ(v[0].message, "unknown key `temprature`, did you mean `temperature`?");
}

TEST(JsonSchema, UnknownKeyWithNoNearNameListsTheKnownKeys) {
  const auto v = check(R"({"mode": "greedy", "nested": {"zzzzzz": 1}})");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].path, "sampler.options.nested.zzzzzz");
  EXPECT_NE(v[0].message.find("known keys: `depth`"), std::string::npos) << v[0].message;
}

TEST(JsonSchema, WrongTypeSaysWhatWasExpectedAndWhatCame) {
  const auto v = check(R"({"mode": "greedy", "top_k": "forty", "verbose": 1, "top_p": 0.5})");
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].to_string(), R"(sampler.options.top_k: expected integer, got string "forty")");
  EXPECT_EQ(v[1].to_string(), "sampler.options.verbose: expected boolean, got integer 1");
  const auto f = check(R"({"mode": "greedy", "top_k": 2.5})");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message, "expected integer, got number 2.5");
}

TEST(JsonSchema, RangesAreInclusiveOrExclusiveAsWritten) {
  auto v = check(R"({"mode": "greedy", "temperature": 2.5})");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].to_string(), "sampler.options.temperature: 2.5 is above the maximum 2");
  EXPECT_TRUE(check(R"({"mode": "greedy", "temperature": 2, "top_p": 1})").empty());
  v = check(R"({"mode": "greedy", "top_p": 0})");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].message, "0 must be greater than 0");
  v = check(R"({"mode": "greedy", "top_k": -1})");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].message, "-1 is below the minimum 0");
}

TEST(JsonSchema, EnumListsTheChoicesAndSuggests) {
  const auto v = check(R"({"mode": "gredy"})");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].path, "sampler.options.mode");
  EXPECT_EQ(v[0].message, R"("gredy" is not one of "greedy", "random"; did you mean "greedy"?)");
}

TEST(JsonSchema, MissingRequiredKeyIsReportedOnTheParent) {
  const auto v = check(R"({"top_k": 3})");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].to_string(), "sampler.options: missing required key `mode` (string)");
}

TEST(JsonSchema, ArrayItemsAreCheckedWithTheirIndex) {
  auto v = check(R"({"mode": "greedy", "bias_tokens": [1, -4, "x"]})");
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].to_string(), "sampler.options.bias_tokens[1]: -4 is below the minimum 0");
  EXPECT_EQ(v[1].to_string(),
            R"(sampler.options.bias_tokens[2]: expected integer, got string "x")");
  v = check(R"({"mode": "greedy", "bias_tokens": [1, 2, 3, 4]})");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].message, "has 4 items, at most 3 allowed");
}

TEST(JsonSchema, EveryViolationIsReportedNotJustTheFirst) {
  const auto v = check(R"({"temprature": 1, "top_k": true, "nested": {"depth": "deep"}})");
  EXPECT_EQ(v.size(), 4u);  // missing mode, unknown key, top_k type, nested.depth type
  try {
    sampler_schema().require_valid(json::parse(R"({"top_k": true})"), "options");
    FAIL() << "expected a throw";
  } catch (const tessera::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("options: missing required key `mode`"), std::string::npos) << what;
    EXPECT_NE(what.find("\noptions.top_k: expected integer, got boolean true"), std::string::npos)
        << what;
  }
}

TEST(JsonSchema, DefaultsFillAbsentKeysRecursivelyAndKeepGivenOnes) {
  const json filled = sampler_schema().with_defaults(
      json::parse(R"({"mode": "random", "top_k": 5, "nested": {}})"));
  EXPECT_EQ(filled, json::parse(R"({"mode": "random", "top_k": 5, "temperature": 1.0,
                                     "verbose": false, "nested": {"depth": 2}})"));
}

TEST(JsonSchema, OpenObjectsAcceptUnknownKeys) {
  const JsonSchema open(
      json::parse(R"({"type": "object", "properties": {"a": {"type": "integer"}}})"));
  EXPECT_TRUE(open.validate(json::parse(R"({"a": 1, "b": "anything"})")).empty());
}

TEST(JsonSchema, TypeListAcceptsAnyOfTheTypes) {
  const JsonSchema either(json::parse(R"({"type": ["integer", "string"]})"));
  EXPECT_TRUE(either.validate(json(3)).empty());
  EXPECT_TRUE(either.validate(json("three")).empty());
  const auto v = either.validate(json(true), "x");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].message, "expected integer, string, got boolean true");
}

TEST(JsonSchema, SchemasOutsideTheSubsetAreRefusedWhenCompiled) {
  const auto refuses = [](const std::string& text, const std::string& needle) {
    try {
      (void)JsonSchema::parse(text);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const tessera::Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  refuses(R"({"type": "string", "pattern": "^a"})",
          "keyword `pattern` is outside the supported subset");
  refuses(
      R"({"type": "object", "properties": {"x": {"typ": "string"}}})",
      "at #/properties/x: keyword `typ` is outside the supported subset (did you mean `type`?)");
  refuses(R"({"type": "float"})", R"("float" is not one of object, string)");
  refuses(R"({"additionalProperties": {"type": "string"}})", "only true or false");
  refuses(R"({"type": "integer", "minimum": 0, "default": -1})",
          "the default does not satisfy the schema: default: -1 is below the minimum 0");
  refuses(R"({"type": "object", )", "options schema is not valid JSON");
  refuses(R"([1, 2])", "expected a JSON object");
}

}  // namespace
