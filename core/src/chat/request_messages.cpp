#include "chat/request_messages.hpp"

#include "chat/message_preprocess.hpp"

namespace tessera::chat {
namespace {

Json flatten_content(const Json& content) {
  if (content.is_null()) {
    return "";
  }
  if (!content.is_array()) {
    return content;
  }
  std::string text;
  bool first = true;
  for (const Json& part : content) {
    const std::string type = part.is_object() ? string_member(part, "type") : std::string();
    // The model reads text only: an image must be refused, not dropped, or the answer would be
    // about a picture the model never saw.
    if (type == "image_url" || type == "input_image" || type == "image") {
      throw ChatEncodingError("images are not supported by this model (a content part of type \"" +
                              type + "\")");
    }
    if (type != "text") {
      continue;
    }
    const auto it = part.find("text");
    if (it == part.end() || !it->is_string()) {
      continue;
    }
    if (!first) {
      text += " ";
    }
    first = false;
    text += it->get<std::string>();
  }
  return text;
}

}  // namespace

Json messages_for_encoder(const Json& messages, const Json& tools, const RequestMapping& mapping) {
  if (!messages.is_array()) {
    throw ChatEncodingError("\"messages\" must be an array");
  }
  if (!tools.is_null() && !tools.is_array()) {
    throw ChatEncodingError("\"tools\" must be an array");
  }
  Json out = Json::array();
  for (const Json& message : messages) {
    if (!message.is_object()) {
      throw ChatEncodingError("every message must be a JSON object");
    }
    Json copy = message;
    if (copy.contains("content")) {
      copy["content"] = flatten_content(copy["content"]);
    }
    out.push_back(std::move(copy));
  }
  if (out.empty() || string_member(out.front(), "role") != "system") {
    out.insert(out.begin(), Json{{"role", "system"}, {"content", ""}});
  }
  if (tools.is_array() && !tools.empty()) {
    out.front()["tools"] = tools;
  }
  if (mapping.continue_final_message && string_member(out.back(), "role") == "assistant") {
    out.back()["wo_eos"] = true;
  }
  return out;
}

}  // namespace tessera::chat
