// Fuzzes the DeepSeek-V4 chat layer with arbitrary bytes, used two ways:
//  - as a JSON request ({"messages": ..., "tools": ...} or a bare messages array) through
//    messages_for_encoder + encode_messages under options taken from the last byte: it must
//    render or throw ChatEncodingError — never another exception (a stray nlohmann type_error
//    would be a 500 instead of a 400), never crash;
//  - as generated text through parse_completion and CompletionStreamParser (chunked by the
//    input's own bytes): the parser throws only CompletionParseError, and for every text it
//    accepts the streamed deltas add up to its result.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "chat/chat_encoder.hpp"
#include "chat/completion_parser.hpp"
#include "chat/request_messages.hpp"

namespace {

using namespace tessera::chat;

void require(bool condition, const char* what, const std::string& detail = "") {
  if (condition) return;
  std::fprintf(stderr, "fuzz_chat invariant broken: %s\n%s\n", what, detail.c_str());
  std::abort();
}

void fuzz_encoder(std::string_view text, uint8_t knobs) {
  Json request;
  try {
    request = Json::parse(text);
  } catch (const Json::exception&) {
    return;
  }
  const bool wrapped = request.is_object() && request.contains("messages");
  const Json messages = wrapped ? request["messages"] : request;
  const Json tools = wrapped && request.contains("tools") ? request["tools"] : Json();
  EncodeOptions options;
  options.thinking_mode = knobs & 1 ? ThinkingMode::kThinking : ThinkingMode::kChat;
  options.drop_thinking = knobs & 2;
  options.add_bos = knobs & 4;
  options.effort_profile =
      knobs & 8 ? ReasoningEffortProfile::kOfficial : ReasoningEffortProfile::kPreview;
  static const char* kEfforts[] = {nullptr, "high", "max", "low"};
  if (const char* effort = kEfforts[(knobs >> 4) & 3]) options.reasoning_effort = effort;
  try {
    const Json mapped = knobs & 64 ? messages_for_encoder(messages, tools) : messages;
    if (knobs & 128 && wrapped && request.contains("context")) options.context = request["context"];
    (void)encode_messages(mapped, options);
  } catch (const ChatEncodingError&) {
  }
}

void fuzz_parser(std::string_view text, uint8_t knobs) {
  const ThinkingMode mode = knobs & 1 ? ThinkingMode::kThinking : ThinkingMode::kChat;
  ParsedCompletion strict;
  bool accepted = true;
  try {
    strict = parse_completion(text, mode);
  } catch (const CompletionParseError&) {
    accepted = false;
  }
  CompletionStreamParser stream(mode);
  std::string reasoning, content;
  std::size_t calls = 0, i = 0, k = 0;
  while (i < text.size()) {
    const std::size_t n = std::min<std::size_t>(text.size() - i, 1 + uint8_t(text[k++]) % 9);
    const auto delta = stream.feed(text.substr(i, n));
    reasoning += delta.reasoning;
    content += delta.content;
    for (const ToolCall& call : delta.tool_calls) {
      require(!accepted || (calls < strict.tool_calls.size() && strict.tool_calls[calls] == call),
              "streamed tool call differs");
      ++calls;
    }
    i += n;
  }
  if (!accepted) return;
  require(stream.finish() == strict, "finish() differs from parse_completion");
  require(reasoning == strict.reasoning, "streamed reasoning differs");
  require(content == strict.content, "streamed content differs");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const uint8_t knobs = data[size - 1];
  const std::string_view text(reinterpret_cast<const char*>(data), size - 1);
  fuzz_encoder(text, knobs);
  fuzz_parser(text, knobs);
  return 0;
}
