// Shared vocabulary of the DeepSeek-V4 chat encoding (tests/data/chat/README.md is the spec).
//
// Messages are JSON in the OpenAI shape. They are nlohmann::ordered_json, not nlohmann::json:
// the prompt renders tool schemas and tool-call arguments with their keys in the order the
// request gave them (as Python dicts do), so request bodies must be parsed into ordered_json.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "util/check.hpp"

namespace tessera::chat {

using Json = nlohmann::ordered_json;

// The encoder's "thinking_mode": "chat" (thinking off) or "thinking".
enum class ThinkingMode { kChat, kThinking };

// The strings that appear literally in prompts and completions (README §1).
inline constexpr std::string_view kBos = "<｜begin▁of▁sentence｜>";
inline constexpr std::string_view kEos = "<｜end▁of▁sentence｜>";
inline constexpr std::string_view kUser = "<｜User｜>";
inline constexpr std::string_view kAssistant = "<｜Assistant｜>";
inline constexpr std::string_view kThinkStart = "<think>";
inline constexpr std::string_view kThinkEnd = "</think>";
inline constexpr std::string_view kDsml = "｜DSML｜";
inline constexpr std::string_view kLatestReminder = "<｜latest_reminder｜>";

// A request the encoder cannot render (bad option, bad message). Maps to HTTP 400.
class ChatEncodingError : public Error {
 public:
  using Error::Error;
};

// Generated text that does not follow the DeepSeek-V4 output format.
class CompletionParseError : public Error {
 public:
  using Error::Error;
};

struct ToolCall {
  std::string name;
  std::string arguments_json;  // a JSON object as text (string="false" values pasted unchecked)
  bool operator==(const ToolCall&) const = default;
};

// One assistant turn split into its parts.
struct ParsedCompletion {
  std::string reasoning;
  std::string content;
  std::vector<ToolCall> tool_calls;
  bool operator==(const ParsedCompletion&) const = default;
};

}  // namespace tessera::chat
