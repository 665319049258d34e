#include "serve/chat_output.hpp"

namespace tessera::serve {

namespace {

void strip_suffix(std::string& s, std::string_view suffix) {
  if (s.size() >= suffix.size() &&
      s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0) {
    s.resize(s.size() - suffix.size());
  }
}

}  // namespace

ChatOutputSplitter::ChatOutputSplitter(chat::ThinkingMode mode,
                                       std::optional<int32_t> think_end_token)
    : parser_(mode),
      mode_(mode),
      think_end_token_(think_end_token),
      reasoning_open_(mode == chat::ThinkingMode::kThinking) {}

ChatOutputSplitter::Piece ChatOutputSplitter::push(std::string_view text,
                                                   std::span<const int32_t> tokens) {
  for (const int32_t t : tokens) {
    if (!reasoning_open_) break;
    if (think_end_token_ && t == *think_end_token_) {
      reasoning_open_ = false;
    } else {
      ++reasoning_tokens_;
    }
  }
  Piece piece = parser_.feed(text);
  tool_calls_ += piece.tool_calls.size();
  return piece;
}

ChatOutputSplitter::Piece ChatOutputSplitter::finish() {
  if (finished_) return {};
  finished_ = true;
  // The engine leaves EOS out of the text. Feeding it ends the content phase, which releases a
  // held-back tail; in the reasoning phase (no </think> yet) EOS is no marker, so it comes back
  // as reasoning text and is cut off again.
  Piece piece = parser_.feed(chat::kEos);
  strip_suffix(piece.reasoning, chat::kEos);
  strip_suffix(piece.content, chat::kEos);
  tool_calls_ += piece.tool_calls.size();
  return piece;
}

}  // namespace tessera::serve
