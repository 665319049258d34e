// DeepSeek-V4 chat encoding parity with DeepSeek's reference encoder (encoding_dsv4.py, sglang
// 0.5.22) on the fixtures of tests/data/chat (README.md there is the spec): every conversation
// byte-identical (and its token ids identical through the fixture tokenizer), every rejected
// input rejected, every completion parsed to the same reasoning / content / tool calls, also
// when streamed in random chunks.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "chat/chat_encoder.hpp"
#include "chat/completion_parser.hpp"
#include "chat/python_json.hpp"
#include "chat/request_messages.hpp"
#include "tokenizer/tokenizer.hpp"

namespace tessera::chat {
namespace {

const std::string kChatDir = std::string(TESSERA_SOURCE_DIR) + "/tests/data/chat/";

// Ordered: the prompt renders keys in the order the fixture (a Python dict) has them.
std::vector<Json> read_jsonl(const std::string& name) {
  std::ifstream in(kChatDir + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing fixture " << name;
  std::vector<Json> rows;
  std::string line;
  while (std::getline(in, line, '\n'))
    if (!line.empty()) rows.push_back(Json::parse(line));
  return rows;
}

EncodeOptions options_of(const Json& row) {
  EncodeOptions options;
  options.thinking_mode = thinking_mode_from_string(row.at("thinking_mode").get<std::string>());
  if (!row.at("reasoning_effort").is_null())
    options.reasoning_effort = row.at("reasoning_effort").get<std::string>();
  options.effort_profile =
      effort_profile_from_string(row.at("reasoning_effort_profile").get<std::string>());
  options.drop_thinking = row.at("drop_thinking").get<bool>();
  options.add_bos = row.at("add_default_bos_token").get<bool>();
  options.context = row.at("context");
  return options;
}

std::string first_difference(const std::string& got, const std::string& want) {
  std::size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  const std::size_t from = i > 60 ? i - 60 : 0;
  return fmt::format("first difference at byte {} (got {} bytes, want {}):\n  got  …{}\n  want …{}",
                     i, got.size(), want.size(), Json(got.substr(from, 120)).dump(),
                     Json(want.substr(from, 120)).dump());
}

TEST(ChatEncoding, ConversationsMatchReference) {
  const auto rows = read_jsonl("conversations.jsonl");
  ASSERT_GE(rows.size(), 80u);
  const auto tokenizer = tokenizer::Tokenizer::from_file(std::string(TESSERA_SOURCE_DIR) +
                                                         "/tests/data/tokenizer/tokenizer.json");
  for (const Json& row : rows) {
    const std::string name = row.at("name");
    SCOPED_TRACE(name);
    std::string prompt;
    try {
      prompt = encode_messages(row.at("messages"), options_of(row));
    } catch (const Error& e) {
      ADD_FAILURE() << "threw: " << e.what();
      continue;
    }
    const std::string want = row.at("expected");
    EXPECT_EQ(prompt, want) << first_difference(prompt, want);
    EXPECT_EQ(tokenizer.encode(prompt), row.at("expected_ids").get<std::vector<int32_t>>());
  }
}

TEST(ChatEncoding, RejectsWhatTheReferenceRejects) {
  const auto rows = read_jsonl("errors.jsonl");
  ASSERT_GE(rows.size(), 10u);
  for (const Json& row : rows) {
    SCOPED_TRACE(row.at("name").get<std::string>() + " (" +
                 row.at("error_message").get<std::string>() + ")");
    EXPECT_THROW((void)encode_messages(row.at("messages"), options_of(row)), ChatEncodingError);
  }
}

TEST(ChatEncoding, EffortIsValidatedOnlyWhenSomethingIsRendered) {
  EncodeOptions options;
  options.thinking_mode = ThinkingMode::kThinking;
  options.reasoning_effort = "turbo";
  EXPECT_EQ(encode_messages(Json::array(), options), std::string(kBos));
  EXPECT_THROW((void)encode_messages(Json::parse(R"([{"role":"user","content":"x"}])"), options),
               ChatEncodingError);
  EXPECT_TRUE(is_valid_reasoning_effort("max", ReasoningEffortProfile::kPreview));
  EXPECT_FALSE(is_valid_reasoning_effort("low", ReasoningEffortProfile::kPreview));
  EXPECT_TRUE(is_valid_reasoning_effort("low", ReasoningEffortProfile::kOfficial));
}

TEST(PythonJson, FloatsAndStringsAsPythonWritesThem) {
  // Python 3: repr(x) / json.dumps(x, ensure_ascii=False).
  const std::vector<std::pair<double, std::string>> floats = {
      {1.0, "1.0"},
      {0.5, "0.5"},
      {100.0, "100.0"},
      {-2.25, "-2.25"},
      {1e16, "1e+16"},
      {1e15, "1000000000000000.0"},
      {1e-4, "0.0001"},
      {1e-5, "1e-05"},
      {1.5e-05, "1.5e-05"},
      {1e20, "1e+20"},
      {-0.0, "-0.0"},
      {0.0, "0.0"},
      {0.1, "0.1"},
      {1.0 / 3, "0.3333333333333333"},
      {123456789012345680.0, "1.2345678901234568e+17"},
      {5e-324, "5e-324"},
      {1.7976931348623157e308, "1.7976931348623157e+308"},
      {12345.678, "12345.678"}};
  for (const auto& [value, want] : floats) EXPECT_EQ(python_float_repr(value), want) << want;
  const Json v = Json::parse(R"({"b": [1, 2.50, true, null, "x\"\\\n\t\u0001\u007f é"], "a": {}})");
  EXPECT_EQ(to_python_json(v),
            "{\"b\": [1, 2.5, true, null, \"x\\\"\\\\\\n\\t\\u0001\u007f é\"], \"a\": {}}");
  EXPECT_EQ(to_python_json(Json::parse("[1e2, -0, 18446744073709551615]")),
            "[100.0, 0, 18446744073709551615]");
}

// The request form of the fixture "tools_empty_system": no system message, tools at request
// level. The sglang mapping inserts the empty system message that carries them.
TEST(ChatEncoding, RequestToolsGoOnAnInsertedSystemMessage) {
  for (const Json& row : read_jsonl("conversations.jsonl")) {
    if (row.at("name") != "tools_empty_system") continue;
    Json request_messages = row.at("messages");
    const Json tools = request_messages[0].at("tools");
    request_messages.erase(request_messages.begin());
    const Json mapped = messages_for_encoder(request_messages, tools);
    EXPECT_EQ(encode_messages(mapped, options_of(row)), row.at("expected").get<std::string>());
    return;
  }
  FAIL() << "fixture case tools_empty_system not found";
}

TEST(ChatEncoding, RequestMappingFlattensContentAndContinuesTheLastAssistant) {
  const Json request = Json::parse(R"([
    {"role": "system", "content": [{"type": "text", "text": "Be"}, {"type": "text", "text": "brief."}]},
    {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
    {"role": "assistant", "content": "Hel"}])");
  RequestMapping mapping;
  mapping.continue_final_message = true;
  const Json mapped = messages_for_encoder(request, nullptr, mapping);
  EXPECT_EQ(encode_messages(mapped),
            "<｜begin▁of▁sentence｜>Be brief.<｜User｜>Hi<｜Assistant｜></think>Hel");
  EXPECT_EQ(encode_messages(messages_for_encoder(request, nullptr)),
            "<｜begin▁of▁sentence｜>Be brief.<｜User｜>Hi<｜Assistant｜></think>Hel"
            "<｜end▁of▁sentence｜>");
}

// The model reads text only: an image part is refused, never silently dropped.
TEST(ChatEncoding, RequestMappingRefusesImageParts) {
  for (const char* type : {"image_url", "input_image", "image"}) {
    const Json request = Json::parse(std::string(R"([{"role": "user", "content": [
      {"type": "text", "text": "What is this?"}, {"type": ")") + type + R"("}]}])");
    try {
      (void)messages_for_encoder(request, nullptr);
      ADD_FAILURE() << type << " was accepted";
    } catch (const ChatEncodingError& e) {
      EXPECT_NE(std::string(e.what()).find("images are not supported"), std::string::npos);
    }
  }
}

// ---- parsing completions ---------------------------------------------------------------------

void expect_parsed(const ParsedCompletion& got, const Json& want) {
  EXPECT_EQ(got.reasoning, want.at("reasoning_content").get<std::string>());
  EXPECT_EQ(got.content, want.at("content").get<std::string>());
  EXPECT_EQ(to_openai_message(got), want);
}

TEST(CompletionParser, MatchesReference) {
  const auto rows = read_jsonl("parse.jsonl");
  ASSERT_GE(rows.size(), 20u);
  for (const Json& row : rows) {
    SCOPED_TRACE(row.at("name").get<std::string>());
    const std::string text = row.at("text");
    const ThinkingMode mode = thinking_mode_from_string(row.at("thinking_mode").get<std::string>());
    if (row.at("expected").is_null()) {
      EXPECT_THROW((void)parse_completion(text, mode), CompletionParseError)
          << "reference: " << row.at("error_message").get<std::string>();
      continue;
    }
    try {
      expect_parsed(parse_completion(text, mode), row.at("expected"));
    } catch (const Error& e) {
      ADD_FAILURE() << "threw: " << e.what();
    }
  }
}

TEST(CompletionParser, StreamingInRandomChunksGivesTheSameTurn) {
  std::mt19937 rng(7);
  for (const Json& row : read_jsonl("parse.jsonl")) {
    if (row.at("expected").is_null()) continue;
    SCOPED_TRACE(row.at("name").get<std::string>());
    const std::string text = row.at("text");
    const ThinkingMode mode = thinking_mode_from_string(row.at("thinking_mode").get<std::string>());
    for (int round = 0; round < 20; ++round) {
      CompletionStreamParser parser(mode);
      std::string reasoning, content;
      std::vector<ToolCall> calls;
      std::size_t i = 0;
      while (i < text.size()) {
        const std::size_t n = std::min<std::size_t>(text.size() - i, 1 + rng() % 7);
        auto delta = parser.feed(std::string_view(text).substr(i, n));
        reasoning += delta.reasoning;
        content += delta.content;
        calls.insert(calls.end(), delta.tool_calls.begin(), delta.tool_calls.end());
        i += n;
      }
      const ParsedCompletion final_turn = parser.finish();
      expect_parsed(final_turn, row.at("expected"));
      EXPECT_EQ(reasoning, final_turn.reasoning);
      EXPECT_EQ(content, final_turn.content);
      // A block cut off inside an invoke yields one more call at finish() than was streamed.
      ASSERT_LE(calls.size(), final_turn.tool_calls.size());
      EXPECT_TRUE(std::equal(calls.begin(), calls.end(), final_turn.tool_calls.begin()));
      if (text.find("</｜DSML｜tool_calls>") != std::string::npos)
        EXPECT_EQ(calls.size(), final_turn.tool_calls.size());
    }
  }
}

// What the encoder writes for an assistant turn parses back to the same turn.
TEST(CompletionParser, RoundTripsRenderedAssistantTurns) {
  const Json messages = Json::parse(R"([
    {"role": "system", "content": "", "tools": [{"type": "function", "function": {"name": "f"}}]},
    {"role": "user", "content": "q"},
    {"role": "assistant", "reasoning_content": "think\nhard", "content": "Sure.",
     "tool_calls": [{"type": "function", "function": {"name": "f",
        "arguments": "{\"s\": \"a \\\"b\\\"\\n<c>\", \"n\": 1.50, \"o\": {\"k\": [true, null]}}"}}]}])");
  EncodeOptions options;
  options.thinking_mode = ThinkingMode::kThinking;
  const std::string prompt = encode_messages(messages, options);
  const std::string generation_prompt = "<｜Assistant｜><think>";
  const std::size_t start = prompt.find(generation_prompt);
  ASSERT_NE(start, std::string::npos);
  const ParsedCompletion turn =
      parse_completion(prompt.substr(start + generation_prompt.size()), ThinkingMode::kThinking);
  EXPECT_EQ(turn.reasoning, "think\nhard");
  EXPECT_EQ(turn.content, "Sure.");
  ASSERT_EQ(turn.tool_calls.size(), 1u);
  EXPECT_EQ(turn.tool_calls[0].name, "f");
  EXPECT_EQ(turn.tool_calls[0].arguments_json,
            R"({"s": "a \"b\"\n<c>", "n": 1.5, "o": {"k": [true, null]}})");
}

}  // namespace
}  // namespace tessera::chat
