// The filters chat templates use, with jinja2's semantics; `tojson` is transformers' version
// (json.dumps with ensure_ascii=False, unsorted keys), not jinja2's HTML-safe one.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "base/error.h"
#include "text/template/arguments.h"
#include "text/template/builtins.h"
#include "text/template/operators.h"
#include "text/template/py_format.h"
#include "text/template/py_string.h"

namespace qmlx::jinja {
namespace {

using FilterFn = Value (*)(const Value& operand, Arguments& args);

std::string text_of(const Value& value) { return py::str(value); }

// jinja2's make_attrgetter: "a.b.0" looks up item a, then b, then index 0.
Value lookup_path(const Value& item, const Value& path) {
  if (!path.is_string()) return get_item(item, path);
  Value current = item;
  for (const auto& part : py::split(path.as_string(), std::string("."), -1)) {
    bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
    if (numeric && part.size() > 18) throw Error("index " + part + " out of range");
    current = numeric ? get_item(current, Value(static_cast<int64_t>(std::stoll(part))))
                      : get_item(current, Value(part));
  }
  return current;
}

// Sort / unique key: strings compare case-insensitively unless asked otherwise.
Value fold_case(const Value& value, bool case_sensitive) {
  if (!case_sensitive && value.is_string()) return Value(py::lower(value.as_string()));
  return value;
}

Value filter_tojson(const Value& value, Arguments& args) {
  BoundArguments a("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
  if (a.bool_or(0, false)) throw Error("tojson: ensure_ascii=True is not supported");
  py::JsonStyle style;
  Value indent = a.get_or(1, Value(None{}));
  if (indent.is_int()) {
    style.indent = std::string(std::max<int64_t>(0, indent.as_int()), ' ');
  } else if (indent.is_string()) {
    style.indent = indent.as_string();
  }
  if (style.indent) style.item_separator = ",";
  Value separators = a.get_or(2, Value(None{}));
  if (separators.is_list() && separators.as_list().items.size() == 2) {
    style.item_separator = text_of(separators.as_list().items[0]);
    style.key_separator = text_of(separators.as_list().items[1]);
  }
  style.sort_keys = a.bool_or(3, false);
  return Value(py::json_dumps(value, style));
}

Value filter_trim(const Value& value, Arguments& args) {
  BoundArguments a("trim", args, {"chars"});
  return Value(py::strip(text_of(value), a.string_or_none(0), true, true));
}

Value filter_length(const Value& value, Arguments& args) {
  BoundArguments("length", args, {});
  return Value(length(value));
}

Value filter_items(const Value& value, Arguments& args) {
  BoundArguments("items", args, {});
  if (value.is_undefined()) return Value::list();
  if (!value.is_dict()) throw Error("items: can only get item pairs from a mapping");
  std::vector<Value> out;
  for (const auto& [key, item] : value.as_dict().entries) {
    out.push_back(Value::list({Value(key), item}, true));
  }
  return Value::list(std::move(out));
}

Value filter_join(const Value& value, Arguments& args) {
  BoundArguments a("join", args, {"d", "attribute"});
  std::string separator = a.has(0) ? text_of(a.get(0)) : "";
  std::string out;
  bool first = true;
  for (const auto& item : iterate(value)) {
    if (!first) out += separator;
    first = false;
    out += text_of(a.has(1) ? lookup_path(item, a.get(1)) : item);
  }
  return Value(std::move(out));
}

Value filter_default(const Value& value, Arguments& args) {
  BoundArguments a("default", args, {"default_value", "boolean"});
  bool use_default = value.is_undefined() || (a.bool_or(1, false) && !value.truthy());
  return use_default ? a.get_or(0, Value("")) : value;
}

Value filter_upper(const Value& value, Arguments& args) {
  BoundArguments("upper", args, {});
  return Value(py::upper(text_of(value)));
}

Value filter_lower(const Value& value, Arguments& args) {
  BoundArguments("lower", args, {});
  return Value(py::lower(text_of(value)));
}

Value filter_capitalize(const Value& value, Arguments& args) {
  BoundArguments("capitalize", args, {});
  return Value(py::capitalize(text_of(value)));
}

// jinja2's title: capitalise each word, words starting after whitespace, -, (, {, [ or <.
Value filter_title(const Value& value, Arguments& args) {
  BoundArguments("title", args, {});
  std::u32string cps = py::decode_utf8(text_of(value));
  std::string out;
  bool word_start = true;
  for (char32_t cp : cps) {
    bool separator =
        py::is_space(cp) || cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<';
    std::string one;
    py::append_utf8(one, cp);
    out += separator ? one : word_start ? py::upper(one) : py::lower(one);
    word_start = separator;
  }
  return Value(std::move(out));
}

Value filter_replace(const Value& value, Arguments& args) {
  BoundArguments a("replace", args, {"old", "new", "count"});
  return Value(py::replace(text_of(value), text_of(a.get(0)), text_of(a.get(1)), a.int_or(2, -1)));
}

Value filter_first(const Value& value, Arguments& args) {
  BoundArguments("first", args, {});
  auto items = iterate(value);
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
}

Value filter_last(const Value& value, Arguments& args) {
  BoundArguments("last", args, {});
  auto items = iterate(value);
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}

// select / reject / selectattr / rejectattr share jinja2's select_or_reject.
Value select_or_reject(const char* name, const Value& value, Arguments& args, bool by_attribute,
                       bool keep_when) {
  size_t next = 0;
  Value attribute;
  if (by_attribute) {
    if (args.positional.empty()) throw Error(std::string(name) + "() missing attribute name");
    attribute = args.positional[next++];
  }
  std::string test;
  Arguments test_args;
  if (next < args.positional.size()) {
    if (!args.positional[next].is_string()) throw Error(std::string(name) + "(): bad test name");
    test = args.positional[next++].as_string();
    if (!has_test(test)) throw Error(std::string(name) + "(): unknown test '" + test + "'");
    test_args.positional.assign(args.positional.begin() + next, args.positional.end());
    test_args.keyword = args.keyword;
  }
  std::vector<Value> out;
  for (const auto& item : iterate(value)) {
    Value subject = by_attribute ? lookup_path(item, attribute) : item;
    Arguments call_args = test_args;
    bool passed = test.empty() ? subject.truthy() : apply_test(test, subject, call_args);
    if (passed == keep_when) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value filter_selectattr(const Value& v, Arguments& a) {
  return select_or_reject("selectattr", v, a, true, true);
}
Value filter_rejectattr(const Value& v, Arguments& a) {
  return select_or_reject("rejectattr", v, a, true, false);
}
Value filter_select(const Value& v, Arguments& a) {
  return select_or_reject("select", v, a, false, true);
}
Value filter_reject(const Value& v, Arguments& a) {
  return select_or_reject("reject", v, a, false, false);
}

Value filter_map(const Value& value, Arguments& args) {
  std::vector<Value> out;
  if (args.positional.empty()) {
    BoundArguments a("map", args, {"attribute", "default"});
    for (const auto& item : iterate(value)) {
      Value found = lookup_path(item, a.get(0));
      out.push_back(found.is_undefined() && a.has(1) ? a.get(1) : found);
    }
    return Value::list(std::move(out));
  }
  if (!args.positional[0].is_string()) throw Error("map(): expected a filter name");
  std::string filter = args.positional[0].as_string();
  if (!has_filter(filter)) throw Error("map(): unknown filter '" + filter + "'");
  Arguments filter_args;
  filter_args.positional.assign(args.positional.begin() + 1, args.positional.end());
  filter_args.keyword = args.keyword;
  for (const auto& item : iterate(value)) {
    Arguments call_args = filter_args;
    out.push_back(apply_filter(filter, item, call_args));
  }
  return Value::list(std::move(out));
}

Value filter_list(const Value& value, Arguments& args) {
  BoundArguments("list", args, {});
  return Value::list(iterate(value));
}

Value filter_string(const Value& value, Arguments& args) {
  BoundArguments("string", args, {});
  return Value(text_of(value));
}

std::optional<double> parse_float(const std::string& text) {
  std::string trimmed = py::strip(text, std::nullopt, true, true);
  if (trimmed.empty()) return std::nullopt;
  char* end = nullptr;
  double result = std::strtod(trimmed.c_str(), &end);
  if (end != trimmed.c_str() + trimmed.size()) return std::nullopt;
  return result;
}

Value filter_int(const Value& value, Arguments& args) {
  BoundArguments a("int", args, {"default", "base"});
  Value fallback = a.get_or(0, Value(int64_t{0}));
  // jinja2 answers the default for NaN (int() raises ValueError, which it catches).
  if (value.is_float())
    return std::isnan(value.as_float()) ? fallback : Value(float_to_int(value.as_float()));
  if (value.is_int() || value.is_bool()) return Value(value.as_int());
  if (!value.is_string()) return fallback;
  std::string trimmed = py::strip(value.as_string(), std::nullopt, true, true);
  char* end = nullptr;
  long long parsed = std::strtoll(trimmed.c_str(), &end, static_cast<int>(a.int_or(1, 10)));
  if (!trimmed.empty() && end == trimmed.c_str() + trimmed.size()) return Value(int64_t{parsed});
  if (auto f = parse_float(trimmed)) return std::isnan(*f) ? fallback : Value(float_to_int(*f));
  return fallback;
}

Value filter_float(const Value& value, Arguments& args) {
  BoundArguments a("float", args, {"default"});
  if (value.is_number()) return Value(value.as_float());
  if (value.is_string()) {
    if (auto f = parse_float(value.as_string())) return Value(*f);
  }
  return a.get_or(0, Value(0.0));
}

Value filter_abs(const Value& value, Arguments& args) {
  BoundArguments("abs", args, {});
  if (value.is_float()) return Value(std::fabs(value.as_float()));
  if (value.is_int() || value.is_bool()) {
    if (value.as_int() == INT64_MIN) throw Error("integer overflow in abs()");
    return Value(static_cast<int64_t>(std::llabs(value.as_int())));
  }
  throw Error("bad operand type for abs(): '" + value.type_name() + "'");
}

Value filter_round(const Value& value, Arguments& args) {
  BoundArguments a("round", args, {"precision", "method"});
  int64_t precision = a.int_or(0, 0);
  std::string method = a.has(1) ? text_of(a.get(1)) : "common";
  if (!value.is_number()) throw Error("round: expected a number");
  double x = value.as_float();
  double scale = std::pow(10.0, static_cast<double>(precision));
  if (method == "ceil") return Value(std::ceil(x * scale) / scale);
  if (method == "floor") return Value(std::floor(x * scale) / scale);
  if (method != "common") throw Error("round: method must be common, ceil or floor");
  if (!value.is_float()) return Value(value.as_int());
  // Python's round(): correctly rounded, ties to even, which is what printf does.
  char buffer[512];
  std::snprintf(buffer, sizeof(buffer), "%.*f", static_cast<int>(std::max<int64_t>(0, precision)),
                x);
  return Value(std::strtod(buffer, nullptr));
}

Value filter_unique(const Value& value, Arguments& args) {
  BoundArguments a("unique", args, {"case_sensitive", "attribute"});
  bool case_sensitive = a.bool_or(0, false);
  std::vector<Value> seen, out;
  for (const auto& item : iterate(value)) {
    Value key = fold_case(a.has(1) ? lookup_path(item, a.get(1)) : item, case_sensitive);
    bool duplicate =
        std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, key); });
    if (duplicate) continue;
    seen.push_back(key);
    out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value filter_reverse(const Value& value, Arguments& args) {
  BoundArguments("reverse", args, {});
  if (value.is_string()) return slice(value, std::nullopt, std::nullopt, -1);
  auto items = iterate(value);
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Value filter_sort(const Value& value, Arguments& args) {
  BoundArguments a("sort", args, {"reverse", "case_sensitive", "attribute"});
  bool reverse = a.bool_or(0, false), case_sensitive = a.bool_or(1, false);
  auto items = iterate(value);
  auto key = [&](const Value& item) {
    return fold_case(a.has(2) ? lookup_path(item, a.get(2)) : item, case_sensitive);
  };
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    int c = compare_values(key(x), key(y));
    return reverse ? c > 0 : c < 0;
  });
  return Value::list(std::move(items));
}

Value filter_dictsort(const Value& value, Arguments& args) {
  BoundArguments a("dictsort", args, {"case_sensitive", "by", "reverse"});
  if (!value.is_dict()) throw Error("dictsort: expected a mapping");
  bool case_sensitive = a.bool_or(0, false), reverse = a.bool_or(2, false);
  std::string by = a.has(1) ? text_of(a.get(1)) : "key";
  if (by != "key" && by != "value") throw Error("dictsort: 'by' must be 'key' or 'value'");
  std::vector<Value> pairs;
  for (const auto& [k, v] : value.as_dict().entries)
    pairs.push_back(Value::list({Value(k), v}, true));
  size_t index = by == "key" ? 0 : 1;
  std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& x, const Value& y) {
    int c = compare_values(fold_case(x.as_list().items[index], case_sensitive),
                           fold_case(y.as_list().items[index], case_sensitive));
    return reverse ? c > 0 : c < 0;
  });
  return Value::list(std::move(pairs));
}

Value filter_safe(const Value& value, Arguments& args) {
  BoundArguments("safe", args, {});
  return Value(text_of(value));
}

Value filter_indent(const Value& value, Arguments& args) {
  BoundArguments a("indent", args, {"width", "first", "blank"});
  Value width = a.get_or(0, Value(int64_t{4}));
  std::string indentation = width.is_string()
                                ? width.as_string()
                                : std::string(std::max<int64_t>(0, width.as_int()), ' ');
  bool first = a.bool_or(1, false), blank = a.bool_or(2, false);
  std::vector<std::string> lines = py::splitlines(text_of(value) + "\n");
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) {
      out += "\n";
      if (blank || !lines[i].empty()) out += indentation;
    }
    out += lines[i];
  }
  if (first) out = indentation + out;
  return Value(std::move(out));
}

Value filter_wordcount(const Value& value, Arguments& args) {
  BoundArguments("wordcount", args, {});
  int64_t words = 0;
  bool in_word = false;
  for (char32_t cp : py::decode_utf8(text_of(value))) {
    bool word_char = cp == '_' || (cp >= '0' && cp <= '9') || py::is_letter(cp);
    if (word_char && !in_word) ++words;
    in_word = word_char;
  }
  return Value(words);
}

Value filter_batch(const Value& value, Arguments& args) {
  BoundArguments a("batch", args, {"linecount", "fill_with"});
  int64_t size = a.int_or(0, 1);
  if (size <= 0) throw Error("batch: linecount must be positive");
  std::vector<Value> batches, current;
  for (const auto& item : iterate(value)) {
    current.push_back(item);
    if (static_cast<int64_t>(current.size()) == size) {
      batches.push_back(Value::list(std::move(current)));
      current.clear();
    }
  }
  if (!current.empty()) {
    if (a.has(1)) {
      while (static_cast<int64_t>(current.size()) < size) current.push_back(a.get(1));
    }
    batches.push_back(Value::list(std::move(current)));
  }
  return Value::list(std::move(batches));
}

Value filter_sum(const Value& value, Arguments& args) {
  BoundArguments a("sum", args, {"attribute", "start"});
  Value total = a.get_or(1, Value(int64_t{0}));
  for (const auto& item : iterate(value)) {
    total = binary_operation("+", total, a.has(0) ? lookup_path(item, a.get(0)) : item);
  }
  return total;
}

Value min_or_max(const char* name, const Value& value, Arguments& args, bool want_max) {
  BoundArguments a(name, args, {"case_sensitive", "attribute"});
  auto items = iterate(value);
  if (items.empty())
    return Value::undefined(std::string("No ") + name + " item, sequence was empty.");
  auto key = [&](const Value& item) {
    return fold_case(a.has(1) ? lookup_path(item, a.get(1)) : item, a.bool_or(0, false));
  };
  Value best = items[0];
  for (const auto& item : items) {
    int c = compare_values(key(item), key(best));
    if (want_max ? c > 0 : c < 0) best = item;
  }
  return best;
}

Value filter_min(const Value& v, Arguments& a) { return min_or_max("min", v, a, false); }
Value filter_max(const Value& v, Arguments& a) { return min_or_max("max", v, a, true); }

Value filter_attr(const Value& value, Arguments& args) {
  BoundArguments a("attr", args, {"name"});
  return get_attribute(value, text_of(a.get(0)));
}

Value filter_format(const Value& value, Arguments& args) {
  if (!args.keyword.empty()) throw Error("format: keyword arguments are not supported");
  return binary_operation("%", Value(text_of(value)), Value::list(args.positional, true));
}

Value filter_center(const Value& value, Arguments& args) {
  BoundArguments a("center", args, {"width"});
  std::string text = text_of(value);
  int64_t width = a.int_or(0, 80);
  int64_t size = static_cast<int64_t>(py::code_point_count(text));
  if (width <= size) return Value(text);
  int64_t padding = width - size;
  int64_t left = padding / 2 + (padding & width & 1);  // CPython's str.center split
  return Value(std::string(left, ' ') + text + std::string(padding - left, ' '));
}

Value filter_escape(const Value& value, Arguments& args) {
  BoundArguments("escape", args, {});
  std::string out;
  for (char c : text_of(value)) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return Value(std::move(out));
}

const std::map<std::string, FilterFn, std::less<>>& filters() {
  static const std::map<std::string, FilterFn, std::less<>> table = {
      {"tojson", filter_tojson},
      {"trim", filter_trim},
      {"length", filter_length},
      {"count", filter_length},
      {"items", filter_items},
      {"join", filter_join},
      {"default", filter_default},
      {"d", filter_default},
      {"upper", filter_upper},
      {"lower", filter_lower},
      {"capitalize", filter_capitalize},
      {"title", filter_title},
      {"replace", filter_replace},
      {"first", filter_first},
      {"last", filter_last},
      {"selectattr", filter_selectattr},
      {"rejectattr", filter_rejectattr},
      {"select", filter_select},
      {"reject", filter_reject},
      {"map", filter_map},
      {"list", filter_list},
      {"string", filter_string},
      {"int", filter_int},
      {"float", filter_float},
      {"abs", filter_abs},
      {"round", filter_round},
      {"unique", filter_unique},
      {"reverse", filter_reverse},
      {"sort", filter_sort},
      {"dictsort", filter_dictsort},
      {"safe", filter_safe},
      {"indent", filter_indent},
      {"wordcount", filter_wordcount},
      {"batch", filter_batch},
      {"sum", filter_sum},
      {"min", filter_min},
      {"max", filter_max},
      {"attr", filter_attr},
      {"format", filter_format},
      {"center", filter_center},
      {"escape", filter_escape},
      {"e", filter_escape},
  };
  return table;
}

}  // namespace

bool has_filter(std::string_view name) { return filters().count(name) > 0; }

Value apply_filter(const std::string& name, const Value& operand, Arguments& args) {
  auto it = filters().find(name);
  if (it == filters().end()) throw Error("unsupported filter '" + name + "'");
  return it->second(operand, args);
}

}  // namespace qmlx::jinja
