#include "chat/chat_prompt.hpp"

#include <fmt/format.h>

#include "chat/request_messages.hpp"

namespace tessera::chat {

ChatPrompt render_chat_prompt(const chat::Json& request, chat::ReasoningEffortProfile profile) {
  const auto messages = request.find("messages");
  if (messages == request.end() || !messages->is_array() || messages->empty()) {
    throw chat::ChatEncodingError("'messages' must be a non-empty array of messages");
  }
  chat::Json tools = nullptr;
  if (const auto t = request.find("tools"); t != request.end() && !t->is_null()) {
    if (!t->is_array()) throw chat::ChatEncodingError("'tools' must be an array");
    tools = *t;
  }
  chat::EncodeOptions options;
  options.effort_profile = profile;
  bool thinking = false;
  if (const auto e = request.find("reasoning_effort"); e != request.end() && !e->is_null()) {
    if (!e->is_string()) throw chat::ChatEncodingError("'reasoning_effort' must be a string");
    const std::string effort = e->get<std::string>();
    if (!chat::is_valid_reasoning_effort(effort, profile)) {
      throw chat::ChatEncodingError(fmt::format(
          "'reasoning_effort' \"{}\" is not valid for this model; use {}", effort,
          profile == chat::ReasoningEffortProfile::kOfficial ? "\"low\", \"high\" or \"max\""
                                                             : "\"high\" or \"max\""));
    }
    options.reasoning_effort = effort;
    thinking = true;
  }
  if (const auto t = request.find("thinking"); t != request.end() && !t->is_null()) {
    if (!t->is_boolean()) throw chat::ChatEncodingError("'thinking' must be a boolean");
    thinking = t->get<bool>();
  }
  options.thinking_mode = thinking ? chat::ThinkingMode::kThinking : chat::ThinkingMode::kChat;
  ChatPrompt prompt;
  prompt.mode = options.thinking_mode;
  prompt.text = chat::encode_messages(chat::messages_for_encoder(*messages, tools), options);
  return prompt;
}

}  // namespace tessera::chat
