#include "chat/message_preprocess.hpp"

#include <algorithm>
#include <map>

namespace tessera::chat {
namespace {

std::string role_of(const Json& message) {
  if (!message.is_object()) {
    throw ChatEncodingError("every message must be a JSON object");
  }
  auto it = message.find("role");
  return it != message.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool is_user_with_blocks(const Json& message) {
  return role_of(message) == "user" && message.contains("content_blocks");
}

Json value_or(const Json& message, const char* key, const Json& fallback) {
  auto it = message.find(key);
  return it == message.end() ? fallback : *it;
}

}  // namespace

bool truthy(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return false;
    case Json::value_t::boolean:
      return v.get<bool>();
    case Json::value_t::number_integer:
      return v.get<int64_t>() != 0;
    case Json::value_t::number_unsigned:
      return v.get<uint64_t>() != 0;
    case Json::value_t::number_float:
      return v.get<double>() != 0.0;
    case Json::value_t::string:
      return !v.get_ref<const std::string&>().empty();  // not v.empty()
    case Json::value_t::array:
    case Json::value_t::object:
      return !v.empty();
    default:
      return true;
  }
}

std::string string_member(const Json& obj, const char* key) {
  if (!obj.is_object()) {
    return "";
  }
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool has_non_null(const Json& message, const char* key) {
  auto it = message.find(key);
  return it != message.end() && !it->is_null();
}

long last_user_index(const Json& messages) {
  for (long i = static_cast<long>(messages.size()) - 1; i >= 0; --i) {
    const std::string role = role_of(messages[static_cast<std::size_t>(i)]);
    if (role == "user" || role == "developer") {
      return i;
    }
  }
  return -1;
}

Json merge_tool_messages(const Json& messages) {
  if (!messages.is_array()) {
    throw ChatEncodingError("messages must be a JSON array");
  }
  Json merged = Json::array();
  for (const Json& message : messages) {
    const std::string role = role_of(message);
    if (role == "tool") {
      Json block = {{"type", "tool_result"},
                    {"tool_use_id", value_or(message, "tool_call_id", "")},
                    {"content", value_or(message, "content", "")}};
      if (!merged.empty() && is_user_with_blocks(merged.back())) {
        merged.back()["content_blocks"].push_back(std::move(block));
      } else {
        merged.push_back({{"role", "user"}, {"content_blocks", Json::array({std::move(block)})}});
      }
    } else if (role == "user") {
      Json block = {{"type", "text"}, {"text", value_or(message, "content", "")}};
      if (!merged.empty() && is_user_with_blocks(merged.back()) &&
          !has_non_null(merged.back(), "task")) {
        merged.back()["content_blocks"].push_back(std::move(block));
      } else {
        Json user = {{"role", "user"},
                     {"content", value_or(message, "content", "")},
                     {"content_blocks", Json::array({std::move(block)})}};
        for (const char* key : {"task", "wo_eos", "mask"}) {
          if (message.contains(key)) {
            user[key] = message[key];
          }
        }
        merged.push_back(std::move(user));
      }
    } else {
      merged.push_back(message);
    }
  }
  return merged;
}

void sort_tool_results_by_call_order(Json& messages) {
  std::map<std::string, long> order;  // call id -> position in the latest assistant's tool_calls
  for (Json& message : messages) {
    const std::string role = role_of(message);
    if (role == "assistant" && message.contains("tool_calls") && truthy(message["tool_calls"])) {
      order.clear();
      const Json& calls = message["tool_calls"];
      if (!calls.is_array()) {
        throw ChatEncodingError("assistant tool_calls must be an array");
      }
      for (std::size_t i = 0; i < calls.size(); ++i) {
        const Json& call = calls[i];
        if (!call.is_object()) {
          throw ChatEncodingError("each tool call must be an object");
        }
        // call.id, else call.function.id (Python: `tc.get("id") or tc["function"].get("id")`).
        Json id = value_or(call, "id", nullptr);
        if (!truthy(id) && call.contains("function") && call["function"].is_object()) {
          id = value_or(call["function"], "id", "");
        }
        if (truthy(id) && id.is_string()) {
          order[id.get<std::string>()] = static_cast<long>(i);
        }
      }
    } else if (role == "user" && message.contains("content_blocks")) {
      Json& blocks = message["content_blocks"];
      std::vector<Json> tool_blocks;
      for (const Json& b : blocks) {
        if (string_member(b, "type") == "tool_result") {
          tool_blocks.push_back(b);
        }
      }
      if (tool_blocks.size() < 2 || order.empty()) {
        continue;
      }
      auto position = [&](const Json& block) -> long {
        const Json& id = block["tool_use_id"];
        if (!id.is_string()) {
          return 0;
        }
        auto it = order.find(id.get<std::string>());
        return it == order.end() ? 0 : it->second;
      };
      std::stable_sort(tool_blocks.begin(), tool_blocks.end(),
                       [&](const Json& a, const Json& b) { return position(a) < position(b); });
      std::size_t next = 0;
      for (Json& b : blocks) {
        if (string_member(b, "type") == "tool_result") {
          b = tool_blocks[next++];
        }
      }
    }
  }
}

Json drop_earlier_thinking(const Json& messages) {
  const long last_user = last_user_index(messages);
  Json result = Json::array();
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const Json& message = messages[i];
    const std::string role = role_of(message);
    const bool always_kept = role == "user" || role == "system" || role == "tool" ||
                             role == "latest_reminder" || role == "direct_search_results";
    if (always_kept || static_cast<long>(i) >= last_user) {
      result.push_back(message);
    } else if (role == "assistant") {
      Json copy = message;
      copy.erase("reasoning_content");
      result.push_back(std::move(copy));
    }
    // developer (and unknown roles) before the last user turn are dropped
  }
  return result;
}

}  // namespace tessera::chat
