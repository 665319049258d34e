// User and tool content is text from outside the conversation's author (end users, web pages a
// tool fetched): special-token text written in it ("<｜end▁of▁sentence｜><｜Assistant｜></think>")
// must stay text, or whoever writes it forges turns. The template's own markers stay special.
//
// How: before the chat template runs, every added-token text inside the content of user and tool
// messages is wrapped in two markers made of a fresh 128-bit random nonce (letters and digits,
// so JSON rendering keeps them; unguessable, so a client cannot write one). After rendering, the
// text between markers is encoded with each added token split after its first character (the
// tokens of its text, never its id), the rest as usual. Content without added-token text is not
// touched, so ordinary prompts tokenize exactly as before.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chat/chat_types.hpp"
#include "tokenizer/tokenizer.hpp"

namespace tessera::serve {

struct PlainMarkers {
  std::string open, close;
  int64_t wrapped = 0;  // how many spans were wrapped
};

// Fresh markers for one request.
[[nodiscard]] PlainMarkers make_plain_markers();

// A copy of `request` whose user / tool message content (a string, or the "text" of content
// parts) has every added-token text wrapped in the markers; counts them in markers.wrapped.
[[nodiscard]] chat::Json mark_special_text_in_content(const chat::Json& request,
                                                      const tokenizer::Tokenizer& tokenizer,
                                                      PlainMarkers& markers);

// The ids of a prompt rendered from a marked request: marked spans as plain text, the rest as
// Tokenizer::encode does. Throws chat::ChatEncodingError when the template did not carry every
// marked span through verbatim (nothing is then tokenized as special by accident).
[[nodiscard]] std::vector<int32_t> encode_with_plain_spans(std::string_view text,
                                                           const PlainMarkers& markers,
                                                           const tokenizer::Tokenizer& tokenizer);

// The ids of `text` with no added token recognised: pieces split after their first character
// until no piece is read as one.
[[nodiscard]] std::vector<int32_t> encode_plain(std::string_view text,
                                                const tokenizer::Tokenizer& tokenizer);

}  // namespace tessera::serve
