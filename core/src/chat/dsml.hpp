// DSML, DeepSeek-V4's tool-call markup (README §3.6 and §6.3): rendering an assistant's
// tool_calls into the prompt, and parsing the block the model generates back into calls.
//
//   \n\n<｜DSML｜tool_calls>
//   <｜DSML｜invoke name="get_weather">
//   <｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>
//   <｜DSML｜parameter name="days" string="false">3</｜DSML｜parameter>
//   </｜DSML｜invoke>
//   </｜DSML｜tool_calls>
//
// string="true" values are raw text; string="false" values are JSON (Python json.dumps form).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "chat/chat_types.hpp"

namespace tessera::chat {

// What opens a tool-call block in generated text (and in rendered assistant turns).
inline constexpr std::string_view kToolCallsStart = "\n\n<｜DSML｜tool_calls";
inline constexpr std::string_view kToolCallsEnd = "</｜DSML｜tool_calls>";

// The block for an assistant's OpenAI-format tool_calls (starting with "\n\n"). `arguments` may be
// a JSON string or an object; anything that is not a JSON object throws ChatEncodingError.
[[nodiscard]] std::string render_dsml_tool_calls(const Json& tool_calls);

// Parses tool calls starting right after kToolCallsStart. Returns the index where parsing stopped
// (just after "</｜DSML｜tool_calls" when the block is closed, the end of the text otherwise) and
// appends the calls; throws CompletionParseError on malformed markup. A block cut short inside an
// invoke still yields that invoke with the parameters read so far (the reference does the same).
std::size_t parse_dsml_tool_calls(std::string_view text, std::size_t index,
                                  std::vector<ToolCall>& calls);

// FIND of the spec: the earliest occurrence of any stop at or after `index` (ties: first listed).
struct StopMatch {
  std::size_t next;          // just past the stop, or text.size() when none was found
  std::string_view skipped;  // text between index and the stop (or the end)
  int stop;                  // index into `stops`, or -1
};
[[nodiscard]] StopMatch read_until_stop(std::string_view text, std::size_t index,
                                        std::initializer_list<std::string_view> stops);

}  // namespace tessera::chat
