#include "chat/dsml.hpp"

#include <fmt/format.h>

#include <set>

#include "chat/message_preprocess.hpp"
#include "chat/python_json.hpp"

namespace tessera::chat {
namespace {

const std::string kInvokeOpen = fmt::format("<{}invoke", kDsml);
const std::string kInvokeClose = fmt::format("</{}invoke", kDsml);
const std::string kParameterOpen = fmt::format("<{}parameter", kDsml);
const std::string kParameterEndMarker = fmt::format("/{}parameter", kDsml);
const std::string kBlockClose = fmt::format("</{}tool_calls>", kDsml);

// Python's str.isspace(), which `\s` of Python's re matches for str patterns.
bool python_space_at(std::string_view s, std::size_t i, std::size_t* length) {
  const auto b = static_cast<unsigned char>(s[i]);
  *length = 1;
  if (b == ' ' || (b >= 0x09 && b <= 0x0D) || (b >= 0x1C && b <= 0x1F)) {
    return true;
  }
  static const std::string_view kWide[] = {"\u0085", "\u00A0", "\u1680", "\u2000", "\u2001",
                                           "\u2002", "\u2003", "\u2004", "\u2005", "\u2006",
                                           "\u2007", "\u2008", "\u2009", "\u200A", "\u2028",
                                           "\u2029", "\u202F", "\u205F", "\u3000"};
  for (std::string_view w : kWide) {
    if (s.substr(i, w.size()) == w) {
      *length = w.size();
      return true;
    }
  }
  return false;
}

// Python `re.findall(pattern + "$", s)` without MULTILINE lets `$` match before one final "\n".
bool ends_with_before_optional_newline(std::string_view s, std::string_view tail,
                                       std::string_view* head) {
  if (s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail) {
    *head = s.substr(0, s.size() - tail.size());
    return true;
  }
  if (!s.empty() && s.back() == '\n') {
    s.remove_suffix(1);
    if (s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail) {
      *head = s.substr(0, s.size() - tail.size());
      return true;
    }
  }
  return false;
}

// `^\s*name="(.*?)">\n$` (DOTALL) on the text between "<｜DSML｜invoke" and the next marker.
bool match_invoke_name(std::string_view s, std::string* name) {
  std::size_t i = 0, length = 0;
  while (i < s.size() && python_space_at(s, i, &length)) {
    i += length;
  }
  s.remove_prefix(i);
  if (s.substr(0, 6) != "name=\"") {
    return false;
  }
  s.remove_prefix(6);
  // Lazy (.*?) followed by `">\n$`: the shortest name, i.e. the tail ">\n\n" wins over ">\n".
  std::string_view head;
  if (s.size() >= 4 && s.substr(s.size() - 4) == "\">\n\n") {
    head = s.substr(0, s.size() - 4);
  } else if (s.size() >= 3 && s.substr(s.size() - 3) == "\">\n") {
    head = s.substr(0, s.size() - 3);
  } else {
    return false;
  }
  *name = std::string(head);
  return true;
}

// `^ name="(.*?)" string="(true|false)">(.*?)<$` (DOTALL) on a parameter's text.
bool match_parameter(std::string_view s, std::string* name, bool* is_string, std::string* value) {
  if (s.substr(0, 7) != " name=\"") {
    return false;
  }
  s.remove_prefix(7);
  static constexpr std::string_view kTrue = "\" string=\"true\">", kFalse = "\" string=\"false\">";
  for (std::size_t p = 0; p < s.size(); ++p) {
    const bool t = s.substr(p, kTrue.size()) == kTrue;
    const bool f = !t && s.substr(p, kFalse.size()) == kFalse;
    if (!t && !f) {
      continue;
    }
    // The first place where the flag appears fixes the (lazy) name; the value then has to end
    // with "<" (before an optional final newline), which does not depend on the name.
    std::string_view rest = s.substr(p + (t ? kTrue.size() : kFalse.size()));
    std::string_view head;
    // Lazy value: "<\n" at the end leaves the shorter value when both could apply.
    if (rest.size() >= 2 && rest.substr(rest.size() - 2) == "<\n") {
      head = rest.substr(0, rest.size() - 2);
    } else if (!ends_with_before_optional_newline(rest, "<", &head)) {
      return false;
    }
    *name = std::string(s.substr(0, p));
    *is_string = t;
    *value = std::string(head);
    return true;
  }
  return false;
}

Json parse_arguments(const Json& function) {
  Json arguments = function.contains("arguments") ? function["arguments"] : Json();
  if (arguments.is_object()) {
    return arguments;
  }
  if (arguments.is_string()) {
    Json parsed;
    try {
      parsed = Json::parse(arguments.get<std::string>());
    } catch (const Json::exception& e) {
      throw ChatEncodingError(fmt::format("tool call '{}': arguments are not valid JSON: {}",
                                          string_member(function, "name"), e.what()));
    }
    if (parsed.is_object()) {
      return parsed;
    }
  }
  throw ChatEncodingError(fmt::format("tool call '{}': function.arguments must be a JSON object",
                                      string_member(function, "name")));
}

}  // namespace

StopMatch read_until_stop(std::string_view text, std::size_t index,
                          std::initializer_list<std::string_view> stops) {
  std::size_t best = std::string_view::npos;
  int which = -1, i = 0;
  for (std::string_view stop : stops) {
    const std::size_t pos = text.find(stop, index);
    if (pos != std::string_view::npos && pos < best) {
      best = pos;
      which = i;
    }
    ++i;
  }
  if (which < 0) {
    return {text.size(), text.substr(std::min(index, text.size())), -1};
  }
  return {best + std::data(stops)[which].size(), text.substr(index, best - index), which};
}

std::string render_dsml_tool_calls(const Json& tool_calls) {
  std::string invokes;
  for (const Json& call : tool_calls) {
    if (!call.is_object() || !call.contains("function") || !call["function"].is_object()) {
      throw ChatEncodingError("each tool call needs a \"function\" object");
    }
    const Json& function = call["function"];
    if (!function.contains("name") || !function["name"].is_string()) {
      throw ChatEncodingError("tool call function.name must be a string");
    }
    std::string params;
    const Json arguments = parse_arguments(function);
    for (const auto& [key, value] : arguments.items()) {
      if (!params.empty()) {
        params += "\n";
      }
      const bool is_string = value.is_string();
      params += fmt::format("<{}parameter name=\"{}\" string=\"{}\">{}</{}parameter>", kDsml, key,
                            is_string ? "true" : "false",
                            is_string ? value.get<std::string>() : to_python_json(value), kDsml);
    }
    if (!invokes.empty()) {
      invokes += "\n";
    }
    invokes += fmt::format("<{}invoke name=\"{}\">\n{}\n</{}invoke>", kDsml,
                           function["name"].get<std::string>(), params, kDsml);
  }
  return fmt::format("\n\n<{}tool_calls>\n{}\n</{}tool_calls>", kDsml, invokes, kDsml);
}

std::size_t parse_dsml_tool_calls(std::string_view text, std::size_t index,
                                  std::vector<ToolCall>& calls) {
  while (index < text.size()) {
    StopMatch m = read_until_stop(text, index, {kInvokeOpen, kBlockClose});
    if (m.skipped != ">\n") {
      throw CompletionParseError(
          fmt::format("tool call format error: expected '>\\n' but got '{}'", m.skipped));
    }
    index = m.next;
    if (m.stop == 1) {
      break;
    }
    if (m.stop < 0) {
      throw CompletionParseError("tool call block ends without its closing tag");
    }

    m = read_until_stop(text, index, {kParameterOpen, kInvokeClose});
    index = m.next;
    ToolCall call;
    if (!match_invoke_name(m.skipped, &call.name)) {
      throw CompletionParseError(fmt::format("tool name format error: '{}'", m.skipped));
    }

    std::vector<std::pair<std::string, std::string>> arguments;  // name -> JSON text of value
    std::set<std::string> seen;
    while (m.stop == 0) {
      m = read_until_stop(text, index, {kParameterEndMarker});
      index = m.next;
      std::string name, value;
      bool is_string = false;
      if (!match_parameter(m.skipped, &name, &is_string, &value)) {
        throw CompletionParseError(fmt::format("parameter format error: '{}'", m.skipped));
      }
      if (!seen.insert(name).second) {
        throw CompletionParseError(fmt::format("duplicate parameter name: '{}'", name));
      }
      arguments.emplace_back(std::move(name), is_string ? to_python_json(value) : value);

      m = read_until_stop(text, index, {kParameterOpen, kInvokeClose});
      index = m.next;
      if (m.skipped != ">\n") {
        throw CompletionParseError(
            fmt::format("parameter format error: expected '>\\n' but got '{}'", m.skipped));
      }
    }
    std::string json = "{";
    for (std::size_t i = 0; i < arguments.size(); ++i) {
      if (i) {
        json += ", ";
      }
      json += to_python_json(arguments[i].first) + ": " + arguments[i].second;
    }
    call.arguments_json = json + "}";
    calls.push_back(std::move(call));
  }
  return index;
}

}  // namespace tessera::chat
