// One chat choice's generated text split, as it streams, into reasoning, content and tool calls
// (chat::CompletionStreamParser), plus the reasoning-token count usage reports.
//
// Reasoning tokens (thinking mode) are the generated tokens before the first `</think>` token;
// without one (cut by max_tokens) every token is reasoning. finish() releases text the parser held
// back because it could have begun a marker ("<", "</thi"...). Text after a malformed tool-call
// block is dropped, as the reference parser refuses it. One per choice; not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chat/chat_types.hpp"
#include "chat/completion_parser.hpp"

namespace tessera::serve {

class ChatOutputSplitter {
 public:
  ChatOutputSplitter(chat::ThinkingMode mode, std::optional<int32_t> think_end_token);

  using Piece = chat::CompletionStreamParser::Delta;
  // `text` is the new output text of this step, `tokens` the ids that produced it.
  [[nodiscard]] Piece push(std::string_view text, std::span<const int32_t> tokens);
  // End of the choice: whatever was held back.
  [[nodiscard]] Piece finish();

  [[nodiscard]] int64_t reasoning_tokens() const { return reasoning_tokens_; }
  [[nodiscard]] std::size_t tool_calls() const { return tool_calls_; }

 private:
  chat::CompletionStreamParser parser_;
  chat::ThinkingMode mode_;
  std::optional<int32_t> think_end_token_;
  bool reasoning_open_;
  int64_t reasoning_tokens_ = 0;
  std::size_t tool_calls_ = 0;
  bool finished_ = false;
};

}  // namespace tessera::serve
