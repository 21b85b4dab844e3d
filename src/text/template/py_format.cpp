#include "text/template/py_format.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "base/error.h"
#include "text/template/py_string.h"

namespace qmlx::jinja::py {

std::string float_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  // Shortest round-trip digits in scientific form, then laid out by Python's rules:
  // positional when -4 <= exponent < 16, else d.ddde+XX.
  char buffer[64];
  auto result =
      std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::scientific);
  std::string sci(buffer, result.ptr);
  size_t e = sci.find('e');
  std::string mantissa = sci.substr(0, e);
  int exponent = std::stoi(sci.substr(e + 1));
  bool negative = mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits.push_back(c);
  }
  std::string out = negative ? "-" : "";
  if (exponent >= -5 + 1 && exponent < 16) {
    int point = exponent + 1;  // digits before the decimal point
    if (point <= 0) {
      out += "0." + std::string(-point, '0') + digits;
    } else if (point >= static_cast<int>(digits.size())) {
      out += digits + std::string(point - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, point) + "." + digits.substr(point);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  char exp_text[16];
  std::snprintf(exp_text, sizeof(exp_text), "e%c%02d", exponent < 0 ? '-' : '+',
                std::abs(exponent));
  return out + exp_text;
}

static bool is_printable(char32_t cp) {
  // Python's str.isprintable() approximated: control and separator characters are not.
  return !(cp < 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0xAD || cp == 0x2028 || cp == 0x2029 ||
           (cp >= 0x2000 && cp <= 0x200F) || cp == 0x1680 || cp == 0x202F || cp == 0x205F ||
           cp == 0x3000 || cp == 0xFEFF || (cp >= 0xD800 && cp <= 0xDFFF));
}

static std::string string_repr(const std::string& text) {
  bool has_single = text.find('\'') != std::string::npos;
  bool has_double = text.find('"') != std::string::npos;
  char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (char32_t cp : decode_utf8(text)) {
    if (cp == static_cast<char32_t>(quote) || cp == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(cp));
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (!is_printable(cp)) {
      char escape[16];
      if (cp < 0x100) {
        std::snprintf(escape, sizeof(escape), "\\x%02x", static_cast<unsigned>(cp));
      } else if (cp < 0x10000) {
        std::snprintf(escape, sizeof(escape), "\\u%04x", static_cast<unsigned>(cp));
      } else {
        std::snprintf(escape, sizeof(escape), "\\U%08x", static_cast<unsigned>(cp));
      }
      out += escape;
    } else {
      append_utf8(out, cp);
    }
  }
  out.push_back(quote);
  return out;
}

static std::string int_text(int64_t value) { return std::to_string(value); }

static std::string str_at(const Value& value, int depth);

static std::string repr_at(const Value& value, int depth) {
  if (depth > kMaxValueDepth) throw Error("value nested too deeply to print");
  if (value.is_string()) return string_repr(value.as_string());
  if (value.is_list()) {
    const ListObj& list = value.as_list();
    std::string out = list.is_tuple ? "(" : "[";
    for (size_t i = 0; i < list.items.size(); ++i) {
      if (i) out += ", ";
      out += repr_at(list.items[i], depth + 1);
    }
    if (list.is_tuple && list.items.size() == 1) out += ",";
    return out + (list.is_tuple ? ")" : "]");
  }
  if (value.is_dict()) {
    std::string out = "{";
    bool first = true;
    for (const auto& [key, item] : value.as_dict().entries) {
      if (!first) out += ", ";
      first = false;
      out += string_repr(key) + ": " + repr_at(item, depth + 1);
    }
    return out + "}";
  }
  if (value.is_undefined()) return "Undefined";
  return str_at(value, depth);
}

std::string repr(const Value& value) { return repr_at(value, 0); }

std::string str(const Value& value) { return str_at(value, 0); }

static std::string str_at(const Value& value, int depth) {
  if (value.is_string()) return value.as_string();
  if (value.is_undefined()) return "";
  if (value.is_none()) return "None";
  if (value.is_bool()) return value.as_bool() ? "True" : "False";
  if (value.is_int()) return int_text(value.as_int());
  if (value.is_float()) return float_repr(value.as_float());
  if (value.is_namespace()) {
    Value attributes = Value::dict();
    attributes.as_dict() = value.as_namespace().attributes;
    return "<Namespace " + repr_at(attributes, depth + 1) + ">";
  }
  if (value.is_callable()) return "<function " + value.as_callable().name + ">";
  return repr_at(value, depth);
}

static void json_string(std::string& out, const std::string& text) {
  out.push_back('"');
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
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
        if (u < 0x20) {
          char escape[8];
          std::snprintf(escape, sizeof(escape), "\\u%04x", u);
          out += escape;
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
}

static std::string json_float(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  return float_repr(value);
}

namespace {

class JsonWriter {
 public:
  explicit JsonWriter(const JsonStyle& style) : style_(style) {}

  void write(const Value& value, int depth) {
    if (depth > kMaxValueDepth) throw Error("tojson: value nested too deeply");
    if (value.is_none()) {
      out_ += "null";
    } else if (value.is_bool()) {
      out_ += value.as_bool() ? "true" : "false";
    } else if (value.is_int()) {
      out_ += int_text(value.as_int());
    } else if (value.is_float()) {
      out_ += json_float(value.as_float());
    } else if (value.is_string()) {
      json_string(out_, value.as_string());
    } else if (value.is_list()) {
      write_list(value.as_list(), depth);
    } else if (value.is_dict()) {
      write_dict(value.as_dict(), depth);
    } else {
      throw Error("tojson: Object of type " + value.type_name() + " is not JSON serializable");
    }
  }

  std::string take() { return std::move(out_); }

 private:
  void newline(int depth) {
    out_.push_back('\n');
    for (int i = 0; i < depth; ++i) out_ += *style_.indent;
  }

  void write_list(const ListObj& list, int depth) {
    if (list.items.empty()) {
      out_ += "[]";
      return;
    }
    out_.push_back('[');
    for (size_t i = 0; i < list.items.size(); ++i) {
      if (i) out_ += style_.item_separator;
      if (style_.indent) newline(depth + 1);
      write(list.items[i], depth + 1);
    }
    if (style_.indent) newline(depth);
    out_.push_back(']');
  }

  void write_dict(const DictObj& dict, int depth) {
    if (dict.entries.empty()) {
      out_ += "{}";
      return;
    }
    std::vector<const std::pair<std::string, Value>*> entries;
    for (const auto& entry : dict.entries) entries.push_back(&entry);
    if (style_.sort_keys) {
      std::stable_sort(entries.begin(), entries.end(),
                       [](auto* a, auto* b) { return a->first < b->first; });
    }
    out_.push_back('{');
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i) out_ += style_.item_separator;
      if (style_.indent) newline(depth + 1);
      json_string(out_, entries[i]->first);
      out_ += style_.key_separator;
      write(entries[i]->second, depth + 1);
    }
    if (style_.indent) newline(depth);
    out_.push_back('}');
  }

  const JsonStyle& style_;
  std::string out_;
};

}  // namespace

std::string json_dumps(const Value& value, const JsonStyle& style) {
  JsonWriter writer(style);
  writer.write(value, 0);
  return writer.take();
}

}  // namespace qmlx::jinja::py
