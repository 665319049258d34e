#include "chat/python_json.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace tessera::chat {
namespace {

void append_string(std::string& out, const std::string& s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += "\\u00";
          out.push_back(kHex[(c >> 4) & 0xF]);
          out.push_back(kHex[c & 0xF]);
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
}

// Python's json.dumps fails past its recursion limit (about 1000); so do we, instead of letting a
// hostile request overflow the stack.
constexpr int kMaxDepth = 1000;

void append_value(std::string& out, const Json& v, int depth) {
  if (depth > kMaxDepth) {
    throw ChatEncodingError("JSON value nested too deeply to render");
  }
  switch (v.type()) {
    case Json::value_t::null:
      out += "null";
      break;
    case Json::value_t::boolean:
      out += v.get<bool>() ? "true" : "false";
      break;
    case Json::value_t::number_integer:
      out += std::to_string(v.get<int64_t>());
      break;
    case Json::value_t::number_unsigned:
      out += std::to_string(v.get<uint64_t>());
      break;
    case Json::value_t::number_float:
      out += python_float_repr(v.get<double>());
      break;
    case Json::value_t::string:
      append_string(out, v.get_ref<const std::string&>());
      break;
    case Json::value_t::array: {
      out.push_back('[');
      bool first = true;
      for (const Json& item : v) {
        if (!first) {
          out += ", ";
        }
        first = false;
        append_value(out, item, depth + 1);
      }
      out.push_back(']');
      break;
    }
    case Json::value_t::object: {
      out.push_back('{');
      bool first = true;
      for (const auto& [key, item] : v.items()) {
        if (!first) {
          out += ", ";
        }
        first = false;
        append_string(out, key);
        out += ": ";
        append_value(out, item, depth + 1);
      }
      out.push_back('}');
      break;
    }
    case Json::value_t::binary:
    case Json::value_t::discarded:
      throw ChatEncodingError("value cannot be written as JSON");
  }
}

}  // namespace

// Python's float_repr_style 'short' (Objects/floatobject.c, format code 'r'): the shortest digits
// that round-trip, positional when the decimal point position decpt satisfies -4 < decpt <= 16.
std::string python_float_repr(double value) {
  if (std::isnan(value)) {
    return "NaN";
  }
  if (std::isinf(value)) {
    return value > 0 ? "Infinity" : "-Infinity";
  }
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value,
                                    std::chars_format::scientific);  // "-1.2345e-07"
  std::string_view text(buffer, static_cast<std::size_t>(result.ptr - buffer));
  std::string out;
  if (text.front() == '-') {
    out.push_back('-');
    text.remove_prefix(1);
  }
  const std::size_t e = text.find('e');
  std::string digits;
  for (char c : text.substr(0, e)) {
    if (c != '.') {
      digits.push_back(c);
    }
  }
  const int exponent = std::atoi(std::string(text.substr(e + 1)).c_str());
  const int decpt = exponent + 1;  // digits d1d2... stand for 0.d1d2... * 10^decpt
  const int n = static_cast<int>(digits.size());
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0." + std::string(static_cast<std::size_t>(-decpt), '0') + digits;
    } else if (decpt >= n) {
      out += digits + std::string(static_cast<std::size_t>(decpt - n), '0') + ".0";
    } else {
      out += digits.substr(0, decpt) + "." + digits.substr(decpt);
    }
    return out;
  }
  out.push_back(digits.front());
  if (n > 1) {
    out += "." + digits.substr(1);
  }
  const int shown = decpt - 1;
  out += shown < 0 ? "e-" : "e+";
  const std::string magnitude = std::to_string(std::abs(shown));
  if (magnitude.size() < 2) {
    out.push_back('0');
  }
  out += magnitude;
  return out;
}

std::string to_python_json(const Json& value) {
  std::string out;
  append_value(out, value, 0);
  return out;
}

}  // namespace tessera::chat
