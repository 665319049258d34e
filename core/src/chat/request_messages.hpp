// From an OpenAI chat-completions request to encoder input, the way sglang 0.5.22 serves
// DeepSeek-V4 (tests/data/chat/README.md §8), so that prompts match what that server renders:
//   - content null -> ""; list content -> its text parts joined with one space (other parts,
//     e.g. images, dropped: DeepSeek-V4 is text-only);
//   - an empty system message is inserted first when messages[0] is not a system message;
//   - request-level tools go on messages[0]["tools"], in the request's own key order (sglang
//     re-serialises them through pydantic, which reorders keys and adds "strict": false; Tessera
//     keeps what the client sent);
//   - with continue_final_message, a final assistant message is left open (no EOS) so generation
//     continues it. Without it the final assistant turn is rendered complete (sglang instead turns
//     it into a user turn; we do not copy that).
#pragma once

#include "chat/chat_types.hpp"

namespace tessera::chat {

struct RequestMapping {
  bool continue_final_message = false;
};

// `messages` is the request's array, `tools` its "tools" value (null or an array).
[[nodiscard]] Json messages_for_encoder(const Json& messages, const Json& tools,
                                        const RequestMapping& mapping = {});

}  // namespace tessera::chat
