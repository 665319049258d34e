// Splitting a generated assistant turn into reasoning, content and tool calls (README §6, the
// reference's parse_message_from_completion_text):
//   thinking:  reasoning </think> content [\n\n<｜DSML｜tool_calls> ... </｜DSML｜tool_calls>] EOS
//   chat:                         content [tool-call block] EOS
// parse_completion is strict: it takes the whole turn (EOS included) and throws
// CompletionParseError where the reference raises.
//
// CompletionStreamParser is the streaming form for frontends: feed it text as it is generated and
// it returns reasoning / content deltas as soon as they cannot be the start of a marker, and each
// tool call when its </｜DSML｜invoke> arrives. finish() returns the strict parse of everything
// fed. The concatenated deltas and streamed calls equal finish()'s result for every well-formed
// turn.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "chat/chat_types.hpp"

namespace tessera::chat {

[[nodiscard]] ParsedCompletion parse_completion(std::string_view text, ThinkingMode mode);

// The OpenAI message: {"role":"assistant","content","reasoning_content","tool_calls":[{"type":
// "function","function":{"name","arguments"}}]} (no call ids, as the reference).
[[nodiscard]] Json to_openai_message(const ParsedCompletion& parsed);

class CompletionStreamParser {
 public:
  struct Delta {
    std::string reasoning;
    std::string content;
    std::vector<ToolCall> tool_calls;
  };

  explicit CompletionStreamParser(ThinkingMode mode);

  [[nodiscard]] Delta feed(std::string_view text);
  // Strict parse of all text fed so far (throws CompletionParseError like parse_completion).
  [[nodiscard]] ParsedCompletion finish() const;

 private:
  enum class Phase { kReasoning, kContent, kToolCalls, kDone };
  void emit_until_stops(std::string& out, std::initializer_list<std::string_view> stops,
                        Phase on_first, Phase on_second);

  ThinkingMode mode_;
  Phase phase_;
  std::string text_;
  std::size_t emitted_ = 0;           // text_[0, emitted_) is accounted for
  std::size_t tool_block_begin_ = 0;  // just after kToolCallsStart
  std::size_t tool_calls_sent_ = 0;
};

}  // namespace tessera::chat
