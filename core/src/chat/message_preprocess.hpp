// The encoder's three rewrites of the message list before rendering (README §2.1-2.3):
//   MERGE  tool messages become tool_result blocks of a user turn; consecutive user messages
//          (and a user right after tool results) become one user turn;
//   SORT   tool_result blocks follow the order of the preceding assistant's tool_calls;
//   DROP   (thinking mode with dropping) earlier assistants lose reasoning_content, earlier
//          developer messages disappear.
// After MERGE every user message carries "content_blocks": [{"type": "text", "text"} |
// {"type": "tool_result", "tool_use_id", "content"}]. None of these functions mutate their input.
#pragma once

#include "chat/chat_types.hpp"

namespace tessera::chat {

[[nodiscard]] Json merge_tool_messages(const Json& messages);
void sort_tool_results_by_call_order(Json& messages);  // in place, on a merged list
[[nodiscard]] Json drop_earlier_thinking(const Json& messages);

// Index of the last user or developer message, or -1.
[[nodiscard]] long last_user_index(const Json& messages);

// Python truthiness of a JSON value (null, false, 0, "", [] and {} are false).
[[nodiscard]] bool truthy(const Json& value);

// The string at obj[key], or "" when obj is not an object or the member is absent / not a string.
[[nodiscard]] std::string string_member(const Json& obj, const char* key);

// messages[i].get(key) is not None.
[[nodiscard]] bool has_non_null(const Json& message, const char* key);

}  // namespace tessera::chat
