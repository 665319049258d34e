#include "chat/completion_parser.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "chat/dsml.hpp"

namespace tessera::chat {

ParsedCompletion parse_completion(std::string_view text, ThinkingMode mode) {
  ParsedCompletion result;
  std::size_t index = 0;
  if (mode == ThinkingMode::kThinking) {
    const StopMatch m = read_until_stop(text, index, {kThinkEnd, kToolCallsStart});
    if (m.stop != 0) {
      throw CompletionParseError("invalid thinking format: missing </think>");
    }
    result.reasoning = std::string(m.skipped);
    index = m.next;
  }
  StopMatch m = read_until_stop(text, index, {kEos, kToolCallsStart});
  result.content = std::string(m.skipped);
  index = m.next;
  if (m.stop < 0) {
    throw CompletionParseError("invalid format: missing EOS token");
  }
  if (m.stop == 1) {
    index = parse_dsml_tool_calls(text, index, result.tool_calls);
    m = read_until_stop(text, index, {kEos});
    if (!m.skipped.empty()) {
      throw CompletionParseError("unexpected content after tool calls");
    }
    index = m.next;
  }
  if (index != text.size()) {
    throw CompletionParseError("unexpected content at end");
  }
  for (std::string_view token : {kBos, kEos, kThinkStart, kThinkEnd, kDsml}) {
    if (result.content.find(token) != std::string::npos ||
        result.reasoning.find(token) != std::string::npos) {
      throw CompletionParseError(fmt::format("unexpected special token '{}' in content", token));
    }
  }
  return result;
}

Json to_openai_message(const ParsedCompletion& parsed) {
  Json calls = Json::array();
  for (const ToolCall& call : parsed.tool_calls) {
    calls.push_back({{"type", "function"},
                     {"function", {{"name", call.name}, {"arguments", call.arguments_json}}}});
  }
  return {{"role", "assistant"},
          {"content", parsed.content},
          {"reasoning_content", parsed.reasoning},
          {"tool_calls", std::move(calls)}};
}

CompletionStreamParser::CompletionStreamParser(ThinkingMode mode)
    : mode_(mode), phase_(mode == ThinkingMode::kThinking ? Phase::kReasoning : Phase::kContent) {}

// Emits text_[emitted_, ...) up to the first stop, or up to where a stop could still begin.
void CompletionStreamParser::emit_until_stops(std::string& out,
                                              std::initializer_list<std::string_view> stops,
                                              Phase on_first, Phase on_second) {
  const StopMatch m = read_until_stop(text_, emitted_, stops);
  if (m.stop >= 0) {
    out.append(m.skipped);
    emitted_ = m.next;
    phase_ = m.stop == 0 ? on_first : on_second;
    if (phase_ == Phase::kToolCalls) {
      tool_block_begin_ = emitted_;
    }
    return;
  }
  // Hold back the longest tail that is a proper prefix of some stop.
  std::size_t hold = 0;
  for (std::string_view stop : stops) {
    for (std::size_t n = std::min(stop.size() - 1, m.skipped.size()); n > hold; --n) {
      if (m.skipped.substr(m.skipped.size() - n) == stop.substr(0, n)) {
        hold = n;
        break;
      }
    }
  }
  out.append(m.skipped.substr(0, m.skipped.size() - hold));
  emitted_ += m.skipped.size() - hold;
}

CompletionStreamParser::Delta CompletionStreamParser::feed(std::string_view text) {
  text_.append(text);
  Delta delta;
  Phase before;
  do {
    before = phase_;
    switch (phase_) {
      case Phase::kReasoning:
        emit_until_stops(delta.reasoning, {kThinkEnd, kToolCallsStart}, Phase::kContent,
                         Phase::kToolCalls);
        break;
      case Phase::kContent:
        emit_until_stops(delta.content, {kEos, kToolCallsStart}, Phase::kDone, Phase::kToolCalls);
        break;
      case Phase::kToolCalls: {
        // Parse the invokes that are complete: everything up to the last "</｜DSML｜invoke".
        const std::string close = fmt::format("</{}invoke", kDsml);
        const std::size_t last = text_.rfind(close);
        if (last == std::string::npos || last < tool_block_begin_) {
          break;
        }
        std::vector<ToolCall> calls;
        try {
          (void)parse_dsml_tool_calls(std::string_view(text_).substr(0, last + close.size()),
                                      tool_block_begin_, calls);
        } catch (const CompletionParseError&) {
          break;  // malformed: finish() reports it
        }
        for (std::size_t i = tool_calls_sent_; i < calls.size(); ++i) {
          delta.tool_calls.push_back(calls[i]);
        }
        tool_calls_sent_ = std::max(tool_calls_sent_, calls.size());
        break;
      }
      case Phase::kDone:
        break;
    }
  } while (phase_ != before);
  return delta;
}

ParsedCompletion CompletionStreamParser::finish() const { return parse_completion(text_, mode_); }

}  // namespace tessera::chat
