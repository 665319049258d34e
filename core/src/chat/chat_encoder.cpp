#include "chat/chat_encoder.hpp"

#include <fmt/format.h>

#include "chat/dsml.hpp"
#include "chat/message_preprocess.hpp"
#include "chat/python_json.hpp"
#include "chat/system_prompt_texts.hpp"

namespace tessera::chat {
namespace {

// README §1: task name -> token.
std::optional<std::string_view> task_token(std::string_view task) {
  if (task == "action") {
    return "<｜action｜>";
  }
  if (task == "query") {
    return "<｜query｜>";
  }
  if (task == "authority") {
    return "<｜authority｜>";
  }
  if (task == "domain") {
    return "<｜domain｜>";
  }
  if (task == "title") {
    return "<｜title｜>";
  }
  if (task == "read_url") {
    return "<｜read_url｜>";
  }
  return std::nullopt;
}

// README §3.1: the paragraph for an effort, or nullopt when the profile has no such effort.
std::optional<std::string_view> effort_paragraph(const std::optional<std::string>& requested,
                                                 ReasoningEffortProfile profile) {
  if (profile == ReasoningEffortProfile::kPreview) {
    const std::string effort = requested.value_or("high");
    if (effort == "high") {
      return "";
    }
    if (effort == "max") {
      return kReasoningEffortAbsoluteMaximum;
    }
    return std::nullopt;
  }
  const std::string effort = requested.value_or("low");
  if (effort == "low") {
    return "";
  }
  if (effort == "high") {
    return kReasoningEffortAbsoluteMaximum;
  }
  if (effort == "max") {
    return kReasoningEffortBeyondMaximum;
  }
  return std::nullopt;
}

const std::string& string_field(const Json& message, const char* key, const char* role) {
  const Json& v = message[key];
  if (!v.is_string()) {
    throw ChatEncodingError(
        fmt::format("{} message: \"{}\" must be a string, got {}", role, key, v.type_name()));
  }
  return v.get_ref<const std::string&>();
}

// `content or ""` for system / assistant text.
std::string text_or_empty(const Json& message, const char* key, const char* role) {
  if (!message.contains(key) || !truthy(message[key])) {
    return "";
  }
  return string_field(message, key, role);
}

// README §3.9 and §3.10: the optional sections of system and developer messages.
std::string tool_and_format_sections(const Json& message) {
  std::string out;
  if (message.contains("tools") && truthy(message["tools"])) {
    const Json& tools = message["tools"];
    if (!tools.is_array()) {
      throw ChatEncodingError("\"tools\" must be an array");
    }
    std::string schemas;
    for (const Json& tool : tools) {
      if (!tool.is_object() || !tool.contains("function")) {
        throw ChatEncodingError("each tool needs a \"function\" object");
      }
      if (!schemas.empty()) {
        schemas += "\n";
      }
      schemas += to_python_json(tool["function"]);
    }
    out += "\n\n";
    out += kToolsSectionBeforeSchemas;
    out += schemas;
    out += kToolsSectionAfterSchemas;
  }
  if (message.contains("response_format") && truthy(message["response_format"])) {
    out += "\n\n";
    out += kResponseFormatSectionBeforeSchema;
    out += to_python_json(message["response_format"]);
  }
  return out;
}

// README §3.4: a tool_result block's content.
std::string tool_result_text(const Json& content) {
  if (content.is_null()) {
    return "None";  // the reference formats Python's None
  }
  if (content.is_string()) {
    return content.get<std::string>();
  }
  if (!content.is_array()) {
    throw ChatEncodingError(fmt::format("tool message content must be a string or a list, got {}",
                                        content.type_name()));
  }
  std::string out;
  for (std::size_t i = 0; i < content.size(); ++i) {
    const Json& part = content[i];
    if (!part.is_object()) {
      throw ChatEncodingError("tool content parts must be objects");
    }
    if (i) {
      out += "\n\n";
    }
    const Json type = part.contains("type") ? part["type"] : Json();
    if (type == "text") {
      const Json text = part.contains("text") ? part["text"] : Json("");
      if (!text.is_string()) {
        throw ChatEncodingError("a text part needs a string \"text\"");
      }
      out += text.get<std::string>();
    } else {
      out += fmt::format("[Unsupported {}]", type.is_string() ? type.get<std::string>() : "None");
    }
  }
  return out;
}

struct RenderContext {
  const Json& messages;  // the full (merged, sorted, maybe dropped) list
  const EncodeOptions& options;
  bool effective_drop;
  long last_user;
  bool thinking() const { return options.thinking_mode == ThinkingMode::kThinking; }
};

std::string render_user(const Json& message) {
  std::string out(kUser);
  const Json& blocks = message["content_blocks"];
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    if (i) {
      out += "\n\n";
    }
    const Json& block = blocks[i];
    if (block["type"] == "text") {
      if (!block["text"].is_string()) {
        throw ChatEncodingError(fmt::format("user message content must be a string, got {}",
                                            block["text"].type_name()));
      }
      out += block["text"].get<std::string>();
    } else {
      out += "<tool_result>" + tool_result_text(block["content"]) + "</tool_result>";
    }
  }
  return out;
}

std::string render_assistant(const RenderContext& ctx, std::size_t index) {
  const Json& message = ctx.messages[index];
  const bool previous_has_task = index > 0 && has_non_null(ctx.messages[index - 1], "task");
  std::string out;
  if (ctx.thinking() && !previous_has_task &&
      (!ctx.effective_drop || static_cast<long>(index) > ctx.last_user)) {
    out += text_or_empty(message, "reasoning_content", "assistant");
    out += kThinkEnd;
  }
  out += text_or_empty(message, "content", "assistant");
  if (message.contains("tool_calls") && truthy(message["tool_calls"])) {
    if (!message["tool_calls"].is_array()) {
      throw ChatEncodingError("assistant tool_calls must be an array");
    }
    out += render_dsml_tool_calls(message["tool_calls"]);
  }
  if (!(message.contains("wo_eos") && truthy(message["wo_eos"]))) {
    out += kEos;
  }
  return out;
}

// README §3.7: what follows message i.
std::string render_suffix(const RenderContext& ctx, std::size_t index, const std::string& role) {
  if (index + 1 < ctx.messages.size()) {
    const Json& next = ctx.messages[index + 1];
    const Json next_role = next.contains("role") ? next["role"] : Json();
    if (next_role != "assistant" && next_role != "latest_reminder") {
      return "";
    }
  }
  const Json& message = ctx.messages[index];
  if (has_non_null(message, "task")) {
    const Json& task = message["task"];
    const auto token = task.is_string() ? task_token(task.get<std::string>()) : std::nullopt;
    if (!token) {
      throw ChatEncodingError(fmt::format(
          "invalid task {}; valid tasks are action, authority, domain, query, read_url, title",
          task.dump()));
    }
    if (task != "action") {
      return std::string(*token);
    }
    return fmt::format("{}{}{}", kAssistant, ctx.thinking() ? kThinkStart : kThinkEnd, *token);
  }
  if (role == "user" || role == "developer") {
    const bool think =
        ctx.thinking() && (!ctx.effective_drop || static_cast<long>(index) >= ctx.last_user);
    return fmt::format("{}{}", kAssistant, think ? kThinkStart : kThinkEnd);
  }
  return "";
}

std::string render_message(const RenderContext& ctx, std::size_t index) {
  const auto paragraph = effort_paragraph(ctx.options.reasoning_effort, ctx.options.effort_profile);
  if (!paragraph) {
    throw ChatEncodingError(fmt::format(
        "invalid reasoning effort '{}' for profile '{}'", *ctx.options.reasoning_effort,
        ctx.options.effort_profile == ReasoningEffortProfile::kPreview ? "preview" : "official"));
  }
  std::string out;
  if (index == 0 && ctx.thinking()) {
    out += *paragraph;
  }

  const Json& message = ctx.messages[index];
  const Json role_json = message.contains("role") ? message["role"] : Json();
  const std::string role = role_json.is_string() ? role_json.get<std::string>() : "";
  if (role == "system") {
    out += text_or_empty(message, "content", "system");
    out += tool_and_format_sections(message);
  } else if (role == "developer") {
    if (!message.contains("content") || !truthy(message["content"])) {
      throw ChatEncodingError("developer message: content must not be empty");
    }
    out += kUser;
    out += string_field(message, "content", "developer");
    out += tool_and_format_sections(message);
  } else if (role == "user") {
    out += render_user(message);
  } else if (role == "latest_reminder") {
    out += kLatestReminder;
    const Json content = message.contains("content") ? message["content"] : Json();
    out += content.is_null() ? std::string("None") : string_field(message, "content", role.c_str());
  } else if (role == "assistant") {
    out += render_assistant(ctx, index);
  } else {
    throw ChatEncodingError(
        fmt::format("unknown role: {}", role_json.is_string() ? role : role_json.dump()));
  }
  return out + render_suffix(ctx, index, role);
}

}  // namespace

ThinkingMode thinking_mode_from_string(std::string_view mode) {
  if (mode == "chat") {
    return ThinkingMode::kChat;
  }
  if (mode == "thinking") {
    return ThinkingMode::kThinking;
  }
  throw ChatEncodingError(fmt::format("invalid thinking_mode '{}' (chat or thinking)", mode));
}

ReasoningEffortProfile effort_profile_from_string(std::string_view name) {
  if (name == "preview") {
    return ReasoningEffortProfile::kPreview;
  }
  if (name == "official") {
    return ReasoningEffortProfile::kOfficial;
  }
  throw ChatEncodingError(
      fmt::format("invalid reasoning effort profile '{}' (preview or official)", name));
}

bool is_valid_reasoning_effort(std::string_view effort, ReasoningEffortProfile profile) {
  return effort_paragraph(std::string(effort), profile).has_value();
}

std::string encode_messages(const Json& messages, const EncodeOptions& options) {
  const Json raw_context = options.context.is_null() ? Json::array() : options.context;
  if (!raw_context.is_array()) {
    throw ChatEncodingError("context must be an array of messages");
  }

  // README §2 step 1: merge, then sort with the context's call order in view.
  Json merged = merge_tool_messages(messages);
  Json all = raw_context;
  all.insert(all.end(), merged.begin(), merged.end());
  sort_tool_results_by_call_order(all);
  merged = Json(all.begin() + static_cast<long>(raw_context.size()), all.end());
  Json context = Json::array();
  if (!raw_context.empty()) {
    context = merge_tool_messages(raw_context);
    sort_tool_results_by_call_order(context);
  }
  Json full = context;
  full.insert(full.end(), merged.begin(), merged.end());

  std::string prompt = options.add_bos && context.empty() ? std::string(kBos) : std::string();

  bool effective_drop = options.drop_thinking;
  for (const Json& m : full) {
    if (m.contains("tools") && truthy(m["tools"])) {
      effective_drop = false;
    }
  }

  std::size_t to_render = merged.size(), context_length = context.size();
  if (options.thinking_mode == ThinkingMode::kThinking && effective_drop) {
    full = drop_earlier_thinking(full);
    to_render = full.size() - drop_earlier_thinking(context).size();
    context_length = full.size() - to_render;
  }
  const RenderContext ctx{full, options, effective_drop, last_user_index(full)};
  for (std::size_t i = 0; i < to_render; ++i) {
    prompt += render_message(ctx, context_length + i);
  }
  return prompt;
}

}  // namespace tessera::chat
