#include "text/template/operators.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "base/error.h"
#include "text/template/py_format.h"
#include "text/template/py_string.h"

namespace qmlx::jinja {
namespace {

[[noreturn]] void unsupported(const std::string& op, const Value& left, const Value& right) {
  if (left.is_undefined()) throw Error(left.undefined_hint());
  if (right.is_undefined()) throw Error(right.undefined_hint());
  throw Error("unsupported operand types for " + op + ": '" + left.type_name() + "' and '" +
              right.type_name() + "'");
}

// Python's integers have no bound; a template's int64 ones do, so an overflow is an error
// (never undefined behaviour or a wrapped value).
[[noreturn]] void overflow(const std::string& op) {
  throw Error("integer overflow in '" + op + "' (template integers are 64-bit)");
}

// x ** y for y >= 0 by squaring: 2 ** (2 ** 62) fails at once instead of looping 2^62 times.
int64_t power(int64_t x, int64_t y) {
  int64_t result = 1;
  while (y > 0) {
    if ((y & 1) && __builtin_mul_overflow(result, x, &result)) overflow("**");
    y >>= 1;
    // x * x is needed only while bits of y remain, and then its overflow is the result's.
    if (y > 0 && __builtin_mul_overflow(x, x, &x)) overflow("**");
  }
  return result;
}

int64_t floor_div(int64_t a, int64_t b) {
  if (a == INT64_MIN && b == -1) overflow("//");
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floor_mod(int64_t a, int64_t b) {
  if (b == -1) return 0;  // INT64_MIN % -1 traps in C++
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// Like range(), a template may not build values without bound: "a" * 10**10 would take all
// memory (and minutes) before failing.
constexpr int64_t kMaxRepeatedBytes = int64_t(1) << 24;
constexpr int64_t kMaxRepeatedItems = 100000;

Value repeat(const Value& sequence, int64_t times) {
  const int64_t unit = sequence.is_string() ? int64_t(sequence.as_string().size())
                                            : int64_t(sequence.as_list().items.size());
  const int64_t limit = sequence.is_string() ? kMaxRepeatedBytes : kMaxRepeatedItems;
  if (times > 0 && unit > 0 && times > limit / unit) {
    throw Error("sequence repetition is too large for a template");
  }
  // An empty sequence repeats to itself however large `times` is ("" * 10**9 looped 10**9
  // times, found by the template_source fuzzer); no times at all give an empty one.
  if (times <= 0 || unit == 0) {
    return sequence.is_string() ? Value(std::string())
                                : Value::list({}, sequence.as_list().is_tuple);
  }
  if (sequence.is_string()) {
    std::string out;
    for (int64_t i = 0; i < times; ++i) out += sequence.as_string();
    return Value(std::move(out));
  }
  std::vector<Value> items;
  for (int64_t i = 0; i < times; ++i) {
    for (const auto& item : sequence.as_list().items) items.push_back(item);
  }
  return Value::list(std::move(items), sequence.as_list().is_tuple);
}

Value numeric(const std::string& op, const Value& a, const Value& b) {
  bool use_float = a.is_float() || b.is_float() || op == "/";
  if (op == "**" && !use_float && b.as_int() < 0) use_float = true;
  if (use_float) {
    double x = a.as_float(), y = b.as_float();
    if ((op == "/" || op == "//" || op == "%") && y == 0) throw Error("division by zero");
    if (op == "+") return Value(x + y);
    if (op == "-") return Value(x - y);
    if (op == "*") return Value(x * y);
    if (op == "/") return Value(x / y);
    if (op == "//") return Value(std::floor(x / y));
    if (op == "%") {
      double r = std::fmod(x, y);
      if (r != 0 && ((r < 0) != (y < 0))) r += y;
      return Value(r);
    }
    return Value(std::pow(x, y));
  }
  int64_t x = a.as_int(), y = b.as_int();
  if ((op == "//" || op == "%") && y == 0) throw Error("integer division or modulo by zero");
  int64_t r = 0;
  if (op == "+" || op == "-" || op == "*") {
    const bool overflowed = op == "+"   ? __builtin_add_overflow(x, y, &r)
                            : op == "-" ? __builtin_sub_overflow(x, y, &r)
                                        : __builtin_mul_overflow(x, y, &r);
    if (overflowed) overflow(op);
    return Value(r);
  }
  if (op == "//") return Value(floor_div(x, y));
  if (op == "%") return Value(floor_mod(x, y));
  return Value(power(x, y));
}

// Python's `%` string formatting for the %s / %d / %r / %% conversions templates use.
Value percent_format(const std::string& format, const Value& arguments) {
  std::vector<Value> values = arguments.is_list() && arguments.as_list().is_tuple
                                  ? arguments.as_list().items
                                  : std::vector<Value>{arguments};
  std::string out;
  size_t next = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out.push_back(format[i]);
      continue;
    }
    if (++i >= format.size()) throw Error("incomplete format");
    char conversion = format[i];
    if (conversion == '%') {
      out.push_back('%');
      continue;
    }
    if (next >= values.size()) throw Error("not enough arguments for format string");
    const Value& value = values[next++];
    if (conversion == 's') {
      out += py::str(value);
    } else if (conversion == 'r') {
      out += py::repr(value);
    } else if (conversion == 'd' || conversion == 'i') {
      if (!value.is_number()) throw Error("%d format: a number is required");
      out += std::to_string(value.is_float() ? float_to_int(value.as_float()) : value.as_int());
    } else {
      throw Error(std::string("unsupported format character '") + conversion + "'");
    }
  }
  if (next < values.size()) throw Error("not all arguments converted during string formatting");
  return Value(std::move(out));
}

}  // namespace

Value binary_operation(const std::string& op, const Value& left, const Value& right) {
  if (op == "~") return Value(py::str(left) + py::str(right));
  if (left.is_number() && right.is_number()) return numeric(op, left, right);
  if (op == "+") {
    if (left.is_string() && right.is_string()) return Value(left.as_string() + right.as_string());
    if (left.is_list() && right.is_list()) {
      std::vector<Value> items = left.as_list().items;
      for (const auto& item : right.as_list().items) items.push_back(item);
      return Value::list(std::move(items), left.as_list().is_tuple);
    }
  }
  if (op == "*") {
    if ((left.is_string() || left.is_list()) && (right.is_int() || right.is_bool())) {
      return repeat(left, right.as_int());
    }
    if ((right.is_string() || right.is_list()) && (left.is_int() || left.is_bool())) {
      return repeat(right, left.as_int());
    }
  }
  if (op == "%" && left.is_string()) return percent_format(left.as_string(), right);
  unsupported(op, left, right);
}

int64_t float_to_int(double x) {
  // -2^63 and 2^63 are exact doubles; every double in [-2^63, 2^63) truncates into int64.
  if (!(x >= -9223372036854775808.0 && x < 9223372036854775808.0)) {
    throw Error(std::isnan(x) ? "cannot convert float NaN to integer"
                              : "float too large to convert to a template integer");
  }
  return static_cast<int64_t>(x);
}

Value negate(const Value& operand) {
  if (operand.is_float()) return Value(-operand.as_float());
  if (operand.is_int() || operand.is_bool()) {
    if (operand.as_int() == INT64_MIN) overflow("-");
    return Value(-operand.as_int());
  }
  if (operand.is_undefined()) throw Error(operand.undefined_hint());
  throw Error("bad operand type for unary -: '" + operand.type_name() + "'");
}

int compare_values(const Value& left, const Value& right) {
  if (left.is_number() && right.is_number()) {
    if (left.is_float() || right.is_float()) {
      double a = left.as_float(), b = right.as_float();
      return a < b ? -1 : a > b ? 1 : 0;
    }
    int64_t a = left.as_int(), b = right.as_int();
    return a < b ? -1 : a > b ? 1 : 0;
  }
  if (left.is_string() && right.is_string()) {
    int c = left.as_string().compare(right.as_string());  // UTF-8 order == code point order
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (left.is_list() && right.is_list()) {
    const auto& a = left.as_list().items;
    const auto& b = right.as_list().items;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
      if (equals(a[i], b[i])) continue;
      return compare_values(a[i], b[i]);
    }
    return a.size() < b.size() ? -1 : a.size() > b.size() ? 1 : 0;
  }
  unsupported("ordering", left, right);
}

bool compare(const std::string& op, const Value& left, const Value& right) {
  if (op == "==") return equals(left, right);
  if (op == "!=") return !equals(left, right);
  if (op == "in") return contains(right, left);
  if (op == "not in") return !contains(right, left);
  int c = compare_values(left, right);
  if (op == "<") return c < 0;
  if (op == "<=") return c <= 0;
  if (op == ">") return c > 0;
  return c >= 0;
}

bool contains(const Value& container, const Value& item) {
  if (container.is_string()) {
    if (!item.is_string()) {
      throw Error("'in <string>' requires string as left operand, not " + item.type_name());
    }
    return container.as_string().find(item.as_string()) != std::string::npos;
  }
  if (container.is_dict()) return item.is_string() && container.as_dict().find(item.as_string());
  if (container.is_undefined()) return false;
  if (container.is_list()) {
    for (const auto& element : container.as_list().items) {
      if (equals(element, item)) return true;
    }
    return false;
  }
  throw Error("argument of type '" + container.type_name() + "' is not iterable");
}

std::vector<Value> iterate(const Value& value) {
  if (value.is_list()) return value.as_list().items;
  if (value.is_undefined()) return {};
  std::vector<Value> items;
  if (value.is_dict()) {
    for (const auto& entry : value.as_dict().entries) items.emplace_back(entry.first);
    return items;
  }
  if (value.is_string()) {
    for (char32_t cp : py::decode_utf8(value.as_string())) {
      std::string one;
      py::append_utf8(one, cp);
      items.emplace_back(std::move(one));
    }
    return items;
  }
  throw Error("'" + value.type_name() + "' object is not iterable");
}

int64_t length(const Value& value) {
  if (value.is_string()) return static_cast<int64_t>(py::code_point_count(value.as_string()));
  if (value.is_list()) return static_cast<int64_t>(value.as_list().items.size());
  if (value.is_dict()) return static_cast<int64_t>(value.as_dict().entries.size());
  if (value.is_undefined()) return 0;
  throw Error("object of type '" + value.type_name() + "' has no len()");
}

// PySlice_AdjustIndices.
static std::vector<int64_t> slice_positions(int64_t size, const std::optional<int64_t>& start,
                                            const std::optional<int64_t>& stop,
                                            const std::optional<int64_t>& step_arg) {
  int64_t step = step_arg.value_or(1);
  if (step == 0) throw Error("slice step cannot be zero");
  auto clamp = [&](std::optional<int64_t> index, int64_t if_absent) {
    if (!index) return if_absent;
    int64_t i = *index;
    if (i < 0) i += size;
    if (step > 0) return std::clamp<int64_t>(i, 0, size);
    return std::clamp<int64_t>(i, -1, size - 1);
  };
  int64_t begin = clamp(start, step > 0 ? 0 : size - 1);
  int64_t end = clamp(stop, step > 0 ? size : -1);
  std::vector<int64_t> positions;
  for (int64_t i = begin; step > 0 ? i < end : i > end; i += step) positions.push_back(i);
  return positions;
}

Value slice(const Value& value, const std::optional<int64_t>& start,
            const std::optional<int64_t>& stop, const std::optional<int64_t>& step) {
  if (value.is_string()) {
    std::u32string cps = py::decode_utf8(value.as_string());
    std::u32string out;
    for (int64_t i : slice_positions(static_cast<int64_t>(cps.size()), start, stop, step)) {
      out.push_back(cps[i]);
    }
    return Value(py::encode_utf8(out));
  }
  if (value.is_list()) {
    const auto& items = value.as_list().items;
    std::vector<Value> out;
    for (int64_t i : slice_positions(static_cast<int64_t>(items.size()), start, stop, step)) {
      out.push_back(items[i]);
    }
    return Value::list(std::move(out), value.as_list().is_tuple);
  }
  if (value.is_undefined()) throw Error(value.undefined_hint());
  throw Error("'" + value.type_name() + "' object is not subscriptable");
}

}  // namespace qmlx::jinja
