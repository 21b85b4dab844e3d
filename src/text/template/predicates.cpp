// The `is` tests chat templates use, with jinja2's definitions (note that in jinja2 a string
// and a dict are both "sequence", and Undefined is "iterable").
#include <map>

#include "base/error.h"
#include "text/template/arguments.h"
#include "text/template/builtins.h"
#include "text/template/operators.h"

namespace qmlx::jinja {
namespace {

using TestFn = bool (*)(const Value& value, Arguments& args);

Value only_argument(const char* name, Arguments& args) {
  BoundArguments a(name, args, {"other"});
  return a.get(0);
}

void no_arguments(const char* name, Arguments& args) { BoundArguments(name, args, {}); }

bool test_defined(const Value& v, Arguments& a) {
  return no_arguments("defined", a), !v.is_undefined();
}
bool test_undefined(const Value& v, Arguments& a) {
  return no_arguments("undefined", a), v.is_undefined();
}
bool test_none(const Value& v, Arguments& a) { return no_arguments("none", a), v.is_none(); }
bool test_string(const Value& v, Arguments& a) { return no_arguments("string", a), v.is_string(); }
bool test_mapping(const Value& v, Arguments& a) { return no_arguments("mapping", a), v.is_dict(); }
bool test_sequence(const Value& v, Arguments& a) {
  no_arguments("sequence", a);
  return v.is_string() || v.is_list() || v.is_dict();
}
bool test_iterable(const Value& v, Arguments& a) {
  no_arguments("iterable", a);
  return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
}
bool test_number(const Value& v, Arguments& a) { return no_arguments("number", a), v.is_number(); }
bool test_integer(const Value& v, Arguments& a) { return no_arguments("integer", a), v.is_int(); }
bool test_float(const Value& v, Arguments& a) { return no_arguments("float", a), v.is_float(); }
bool test_boolean(const Value& v, Arguments& a) { return no_arguments("boolean", a), v.is_bool(); }
bool test_true(const Value& v, Arguments& a) {
  return no_arguments("true", a), v.is_bool() && v.as_bool();
}
bool test_false(const Value& v, Arguments& a) {
  return no_arguments("false", a), v.is_bool() && !v.as_bool();
}
bool test_callable(const Value& v, Arguments& a) {
  return no_arguments("callable", a), v.is_callable();
}

int64_t integer_of(const char* name, const Value& v) {
  if (!v.is_int() && !v.is_bool()) throw Error(std::string(name) + " test expects an integer");
  return v.as_int();
}
bool test_odd(const Value& v, Arguments& a) {
  return no_arguments("odd", a), (integer_of("odd", v) % 2 + 2) % 2 == 1;
}
bool test_even(const Value& v, Arguments& a) {
  return no_arguments("even", a), integer_of("even", v) % 2 == 0;
}
bool test_divisibleby(const Value& v, Arguments& a) {
  int64_t divisor = integer_of("divisibleby", only_argument("divisibleby", a));
  if (divisor == 0) throw Error("divisibleby: division by zero");
  return integer_of("divisibleby", v) % divisor == 0;
}

bool test_in(const Value& v, Arguments& a) { return contains(only_argument("in", a), v); }
bool test_eq(const Value& v, Arguments& a) { return equals(v, only_argument("eq", a)); }
bool test_ne(const Value& v, Arguments& a) { return !equals(v, only_argument("ne", a)); }
bool test_lt(const Value& v, Arguments& a) { return compare_values(v, only_argument("lt", a)) < 0; }
bool test_le(const Value& v, Arguments& a) {
  return compare_values(v, only_argument("le", a)) <= 0;
}
bool test_gt(const Value& v, Arguments& a) { return compare_values(v, only_argument("gt", a)) > 0; }
bool test_ge(const Value& v, Arguments& a) {
  return compare_values(v, only_argument("ge", a)) >= 0;
}

// `sameas` is identity: containers are the same object, scalars (None, bools) equal.
bool test_sameas(const Value& v, Arguments& a) {
  Value other = only_argument("sameas", a);
  if (v.storage().index() != other.storage().index()) return false;
  if (v.is_list()) return &v.as_list() == &other.as_list();
  if (v.is_dict()) return &v.as_dict() == &other.as_dict();
  return equals(v, other);
}

bool test_lower(const Value& v, Arguments& a) {
  no_arguments("lower", a);
  if (!v.is_string()) return false;
  bool any_letter = false;
  for (char c : v.as_string()) {
    if (c >= 'A' && c <= 'Z') return false;
    any_letter = any_letter || (c >= 'a' && c <= 'z');
  }
  return any_letter;
}

bool test_upper(const Value& v, Arguments& a) {
  no_arguments("upper", a);
  if (!v.is_string()) return false;
  bool any_letter = false;
  for (char c : v.as_string()) {
    if (c >= 'a' && c <= 'z') return false;
    any_letter = any_letter || (c >= 'A' && c <= 'Z');
  }
  return any_letter;
}

bool test_filter(const Value& v, Arguments& a) {
  no_arguments("filter", a);
  return v.is_string() && has_filter(v.as_string());
}

bool test_test(const Value& v, Arguments& a) {
  no_arguments("test", a);
  return v.is_string() && has_test(v.as_string());
}

const std::map<std::string, TestFn, std::less<>>& tests() {
  static const std::map<std::string, TestFn, std::less<>> table = {
      {"defined", test_defined},
      {"undefined", test_undefined},
      {"none", test_none},
      {"string", test_string},
      {"mapping", test_mapping},
      {"sequence", test_sequence},
      {"iterable", test_iterable},
      {"number", test_number},
      {"integer", test_integer},
      {"float", test_float},
      {"boolean", test_boolean},
      {"true", test_true},
      {"false", test_false},
      {"callable", test_callable},
      {"odd", test_odd},
      {"even", test_even},
      {"divisibleby", test_divisibleby},
      {"in", test_in},
      {"eq", test_eq},
      {"equalto", test_eq},
      {"==", test_eq},
      {"ne", test_ne},
      {"!=", test_ne},
      {"lt", test_lt},
      {"lessthan", test_lt},
      {"<", test_lt},
      {"le", test_le},
      {"<=", test_le},
      {"gt", test_gt},
      {"greaterthan", test_gt},
      {">", test_gt},
      {"ge", test_ge},
      {">=", test_ge},
      {"sameas", test_sameas},
      {"lower", test_lower},
      {"upper", test_upper},
      {"filter", test_filter},
      {"test", test_test},
  };
  return table;
}

}  // namespace

bool has_test(std::string_view name) { return tests().count(name) > 0; }

bool apply_test(const std::string& name, const Value& operand, Arguments& args) {
  auto it = tests().find(name);
  if (it == tests().end()) throw Error("unsupported test '" + name + "'");
  return it->second(operand, args);
}

}  // namespace qmlx::jinja
