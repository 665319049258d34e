// DeepSeek-V4 prompt encoding: OpenAI-shaped messages -> the prompt string the model was trained
// on, byte-identical to DeepSeek's reference encoder `encoding_dsv4.py` (as shipped in sglang
// 0.5.22). The rules are written out in tests/data/chat/README.md; this file follows its sections.
//
// Tokenize the result with add_special_tokens = false: the prompt already spells out its BOS, and
// the special-token strings in it become their ids because the tokenizer matches added tokens in
// text. Content is not escaped (as in the reference): a user who types "<｜User｜>" produces that
// token; callers that must prevent this have to filter before encoding.
#pragma once

#include <optional>
#include <string>

#include "chat/chat_types.hpp"

namespace tessera::chat {

// sglang >= 0.5.20 knows two tables of reasoning-effort paragraphs (README §4).
enum class ReasoningEffortProfile {
  kPreview,   // the release encoder: effort null|"high" -> nothing, "max" -> paragraph P
  kOfficial,  // later revision: null|"low" -> nothing, "high" -> P, "max" -> paragraph O
};

struct EncodeOptions {
  ThinkingMode thinking_mode = ThinkingMode::kChat;
  // null, "high", "max" (and "low" with the official profile); anything else is an error once a
  // message is rendered. Only matters in thinking mode, before message 0.
  std::optional<std::string> reasoning_effort;
  ReasoningEffortProfile effort_profile = ReasoningEffortProfile::kPreview;
  // Drop reasoning of assistant turns before the last user turn (thinking mode only; switched
  // off automatically when any message carries tools).
  bool drop_thinking = true;
  // Start with BOS when there is no context.
  bool add_bos = true;
  // Earlier messages already in the KV cache (an array, or null): they shape the rendering of
  // `messages` (tool-result order, dropping, message indices) but are not rendered themselves.
  Json context = nullptr;
};

// The prompt for `messages` (a JSON array). Throws ChatEncodingError for what the reference
// rejects: invalid effort/profile, empty developer content, unknown roles or tasks, tool-call
// arguments that are not a JSON object, null user text.
[[nodiscard]] std::string encode_messages(const Json& messages, const EncodeOptions& options = {});

// Option values as the reference spells them; unknown names throw ChatEncodingError.
[[nodiscard]] ThinkingMode thinking_mode_from_string(std::string_view mode);  // chat|thinking
[[nodiscard]] ReasoningEffortProfile effort_profile_from_string(
    std::string_view name);  // preview|official

// The effort names of a profile's table, for request validation ("high", "max"; "low" too for
// the official profile).
[[nodiscard]] bool is_valid_reasoning_effort(std::string_view effort,
                                             ReasoningEffortProfile profile);

}  // namespace tessera::chat
