// The chat half of a frontend request, on the host side: OpenAI-shaped fields -> the DeepSeek-V4
// prompt text (chat/request_messages.hpp then chat/chat_encoder.hpp), and the thinking mode the
// output parser must use. Frontends never link the chat code; they reach it through submit
// ("messages") and apply_chat_template of the engine table (serve/serving_api.hpp).
//
// Fields read: messages (array, required), tools (array), thinking (bool), reasoning_effort
// (string). Thinking is on when `thinking` is true, or when it is absent and reasoning_effort is
// given. Pure functions; thread-safe.
#pragma once

#include <string>

#include "chat/chat_encoder.hpp"
#include "chat/chat_types.hpp"

namespace tessera::chat {

struct ChatPrompt {
  std::string text;
  chat::ThinkingMode mode = chat::ThinkingMode::kChat;
};

// Throws chat::ChatEncodingError for anything the encoder or the request rules refuse (the
// caller maps it to an invalid-argument status).
[[nodiscard]] ChatPrompt render_chat_prompt(const chat::Json& request,
                                            chat::ReasoningEffortProfile profile);

}  // namespace tessera::chat
