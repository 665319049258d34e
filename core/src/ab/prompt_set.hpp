// The prompts of an A/B run: a JSONL file, one prompt per line, in one of three shapes
//   {"prompt": "text"}                    tokenized as is (no chat template)
//   {"messages": [...], ...}              rendered as a chat request (chat/chat_prompt.hpp:
//                                         "thinking", "reasoning_effort", "tools" are honoured)
//   {"token_ids": [1, 2, 3]}              used as is (checkpoints without a tokenizer)
// and an optional "id" (string) naming it in the report. Blank lines are skipped.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "chat/chat_types.hpp"
#include "tokenizer/tokenizer.hpp"

namespace tessera::ab {

struct AbPrompt {
  std::string id;      // "id" field, else "line N"
  std::string kind;    // "prompt" | "messages" | "token_ids"
  std::string text;    // "prompt" text, or the rendered chat prompt once tokenized
  chat::Json request;  // the whole line (for "messages")
  std::vector<int32_t> token_ids;
};

// Throws tessera::Error naming the file and line for unreadable files, bad JSON, a line with none
// or several of the three shapes, and an empty file. At most kMaxPrompts lines.
inline constexpr size_t kMaxPrompts = 100000;
std::vector<AbPrompt> load_prompts(const std::filesystem::path& path);

// Fills token_ids (and text for "messages") with `tokenizer`. Token ids are checked against
// vocab_size. `tokenizer` may be null only when every prompt is "token_ids".
void tokenize_prompts(std::vector<AbPrompt>& prompts, const tokenizer::Tokenizer* tokenizer,
                      int64_t vocab_size);

}  // namespace tessera::ab
