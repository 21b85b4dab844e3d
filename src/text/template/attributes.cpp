// Attribute and item lookup, and the str / dict methods templates call.
#include <ctime>

#include "base/error.h"
#include "text/template/arguments.h"
#include "text/template/builtins.h"
#include "text/template/operators.h"
#include "text/template/py_format.h"
#include "text/template/py_string.h"

namespace qmlx::jinja {
namespace {

std::vector<Value> strings_to_values(const std::vector<std::string>& parts) {
  std::vector<Value> out;
  out.reserve(parts.size());
  for (const auto& part : parts) out.emplace_back(part);
  return out;
}

// startswith/endswith accept a string or a tuple of strings.
bool affix_matches(const std::string& text, const Value& affix, bool at_start) {
  if (affix.is_list()) {
    for (const auto& item : affix.as_list().items) {
      if (affix_matches(text, item, at_start)) return true;
    }
    return false;
  }
  if (!affix.is_string()) throw Error("startswith/endswith expects a string or tuple");
  const std::string& a = affix.as_string();
  if (a.size() > text.size()) return false;
  return at_start ? text.compare(0, a.size(), a) == 0
                  : text.compare(text.size() - a.size(), a.size(), a) == 0;
}

// str.format with {} / {0} / {name} fields (no format specs).
std::string str_format(const std::string& format, Arguments& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    char c = format[i];
    if ((c == '{' || c == '}') && i + 1 < format.size() && format[i + 1] == c) {
      out.push_back(c);
      ++i;
      continue;
    }
    if (c != '{') {
      out.push_back(c);
      continue;
    }
    size_t close = format.find('}', i);
    if (close == std::string::npos) throw Error("str.format: single '{' in format string");
    std::string field = format.substr(i + 1, close - i - 1);
    if (field.find_first_of(":!") != std::string::npos) {
      throw Error("str.format: format specifications are not supported");
    }
    const Value* value = nullptr;
    if (field.empty() || std::isdigit(static_cast<unsigned char>(field[0]))) {
      size_t index = field.empty() ? auto_index++ : std::stoul(field);
      if (index >= args.positional.size()) throw Error("str.format: index out of range");
      value = &args.positional[index];
    } else {
      for (const auto& [key, v] : args.keyword) {
        if (key == field) value = &v;
      }
      if (!value) throw Error("str.format: missing keyword '" + field + "'");
    }
    out += py::str(*value);
    i = close;
  }
  return out;
}

Value call_string_method(const std::string& self, const std::string& name, Arguments& args) {
  auto bind = [&](std::initializer_list<const char*> params) {
    return BoundArguments("str." + name, args, params);
  };
  if (name == "startswith" || name == "endswith") {
    auto a = bind({"affix"});
    return Value(affix_matches(self, a.get(0), name == "startswith"));
  }
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    auto a = bind({"chars"});
    return Value(py::strip(self, a.string_or_none(0), name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit") {
    auto a = bind({"sep", "maxsplit"});
    auto parts = name == "split" ? py::split(self, a.string_or_none(0), a.int_or(1, -1))
                                 : py::rsplit(self, a.string_or_none(0), a.int_or(1, -1));
    return Value::list(strings_to_values(parts));
  }
  if (name == "splitlines") {
    return Value::list(strings_to_values(py::splitlines(self)));
  }
  if (name == "replace") {
    auto a = bind({"old", "new", "count"});
    if (!a.get(0).is_string() || !a.get(1).is_string()) throw Error("str.replace expects strings");
    return Value(py::replace(self, a.get(0).as_string(), a.get(1).as_string(), a.int_or(2, -1)));
  }
  if (name == "upper") return Value(py::upper(self));
  if (name == "lower") return Value(py::lower(self));
  if (name == "title") return Value(py::title(self));
  if (name == "capitalize") return Value(py::capitalize(self));
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex") {
    auto a = bind({"sub"});
    if (!a.get(0).is_string()) throw Error("str." + name + " expects a string");
    int64_t at = py::find(self, a.get(0).as_string(), name[0] == 'r');
    if (at < 0 && name.find("index") != std::string::npos) throw Error("substring not found");
    return Value(at);
  }
  if (name == "count") {
    auto a = bind({"sub"});
    if (!a.get(0).is_string()) throw Error("str.count expects a string");
    return Value(py::count(self, a.get(0).as_string()));
  }
  if (name == "join") {
    auto a = bind({"iterable"});
    std::string out;
    bool first = true;
    for (const auto& item : iterate(a.get(0))) {
      if (!item.is_string()) throw Error("str.join: sequence item is not a string");
      if (!first) out += self;
      first = false;
      out += item.as_string();
    }
    return Value(std::move(out));
  }
  if (name == "format") return Value(str_format(self, args));
  if (name == "isdigit" || name == "isspace" || name == "isalpha" || name == "isalnum") {
    std::u32string cps = py::decode_utf8(self);
    bool all = !cps.empty();
    for (char32_t cp : cps) {
      bool digit = cp >= '0' && cp <= '9';
      bool ok = name == "isdigit"   ? digit
                : name == "isspace" ? py::is_space(cp)
                : name == "isalpha" ? py::is_letter(cp)
                                    : digit || py::is_letter(cp);
      all = all && ok;
    }
    return Value(all);
  }
  if (name == "islower") return Value(py::lower(self) == self && py::upper(self) != self);
  if (name == "isupper") return Value(py::upper(self) == self && py::lower(self) != self);
  throw Error("unsupported string method '" + name + "'");
}

Value call_dict_method(const Value& self, const std::string& name, Arguments& args) {
  const DictObj& dict = self.as_dict();
  if (name == "items" || name == "keys" || name == "values") {
    BoundArguments("dict." + name, args, {});
    std::vector<Value> out;
    for (const auto& [key, value] : dict.entries) {
      if (name == "items") {
        out.push_back(Value::list({Value(key), value}, true));
      } else {
        out.push_back(name == "keys" ? Value(key) : value);
      }
    }
    return Value::list(std::move(out));
  }
  if (name == "get") {
    BoundArguments a("dict.get", args, {"key", "default"});
    const Value& key = a.get(0);
    const Value* found = key.is_string() ? dict.find(key.as_string()) : nullptr;
    return found ? *found : a.get_or(1, Value(None{}));
  }
  if (name == "copy") {
    Value copy = Value::dict();
    copy.as_dict() = dict;
    return copy;
  }
  throw Error("unsupported dict method '" + name + "' (templates cannot modify dicts)");
}

Value call_list_method(const Value& self, const std::string& name, Arguments& args) {
  const auto& items = self.as_list().items;
  if (name == "index") {
    BoundArguments a("list.index", args, {"value"});
    for (size_t i = 0; i < items.size(); ++i) {
      if (equals(items[i], a.get(0))) return Value(static_cast<int64_t>(i));
    }
    throw Error("list.index(x): x not in list");
  }
  if (name == "count") {
    BoundArguments a("list.count", args, {"value"});
    int64_t n = 0;
    for (const auto& item : items) n += equals(item, a.get(0));
    return Value(n);
  }
  throw Error("unsupported list method '" + name + "' (templates cannot modify lists)");
}

const std::vector<std::string_view> kStringMethods = {
    "startswith", "endswith", "strip",   "lstrip",  "rstrip", "split",      "rsplit",
    "splitlines", "replace",  "upper",   "lower",   "title",  "capitalize", "find",
    "rfind",      "index",    "rindex",  "count",   "join",   "format",     "isdigit",
    "isspace",    "isalpha",  "isalnum", "islower", "isupper"};
const std::vector<std::string_view> kDictMethods = {"items", "keys",   "values",     "get",  "copy",
                                                    "pop",   "update", "setdefault", "clear"};
const std::vector<std::string_view> kListMethods = {
    "index", "count", "append", "extend", "pop", "insert", "remove", "sort", "reverse", "clear"};

bool listed(const std::vector<std::string_view>& names, const std::string& name) {
  for (auto n : names) {
    if (n == name) return true;
  }
  return false;
}

}  // namespace

bool find_method(const Value& object, const std::string& name, Value& method) {
  if (object.is_string() && listed(kStringMethods, name)) {
    std::string self = object.as_string();
    method = Value::callable("str." + name, [self, name](Arguments& args) {
      return call_string_method(self, name, args);
    });
    return true;
  }
  if (object.is_dict() && listed(kDictMethods, name)) {
    method = Value::callable("dict." + name, [object, name](Arguments& args) {
      return call_dict_method(object, name, args);
    });
    return true;
  }
  if (object.is_list() && listed(kListMethods, name)) {
    method = Value::callable("list." + name, [object, name](Arguments& args) {
      return call_list_method(object, name, args);
    });
    return true;
  }
  return false;
}

static std::string describe(const Value& object) { return "'" + object.type_name() + " object'"; }

Value get_attribute(const Value& object, const std::string& name) {
  if (object.is_undefined()) throw Error(object.undefined_hint());
  Value method;
  if (find_method(object, name, method)) return method;
  if (object.is_dict()) {
    if (const Value* found = object.as_dict().find(name)) return *found;
  } else if (object.is_namespace()) {
    if (const Value* found = object.as_namespace().attributes.find(name)) return *found;
  }
  return Value::undefined(describe(object) + " has no attribute '" + name + "'");
}

Value get_item(const Value& object, const Value& key) {
  if (object.is_undefined()) throw Error(object.undefined_hint());
  if (object.is_dict() && key.is_string()) {
    if (const Value* found = object.as_dict().find(key.as_string())) return *found;
  } else if ((object.is_list() || object.is_string()) && (key.is_int() || key.is_bool())) {
    int64_t size = length(object);
    int64_t index = key.as_int() < 0 ? key.as_int() + size : key.as_int();
    if (index >= 0 && index < size) {
      if (object.is_list()) return object.as_list().items[index];
      return slice(object, index, index + 1, 1);
    }
  }
  if (key.is_string()) return get_attribute(object, key.as_string());
  return Value::undefined(describe(object) + " has no element " + py::repr(key));
}

}  // namespace qmlx::jinja
