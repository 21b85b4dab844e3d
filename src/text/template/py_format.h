// Python's textual forms of values: str(), repr() and json.dumps(). Templates print values
// directly (`{{ 1.0 }}` is "1.0", `{{ [1, 'a'] }}` is "[1, 'a']") and serialise tool schemas
// with transformers' `tojson`, which is json.dumps(ensure_ascii=False) with Python's default
// separators and float repr; the model was trained on exactly those bytes.
#pragma once

#include <optional>
#include <string>

#include "text/template/value.h"

namespace qmlx::jinja::py {

// float.__repr__: shortest round-trip digits, "1.0", "1e-05", "1e+16", "inf", "nan".
std::string float_repr(double value);

// str(value); Undefined prints as "".
std::string str(const Value& value);
// repr(value).
std::string repr(const Value& value);

struct JsonStyle {
  std::optional<std::string> indent;  // absent: single line
  std::string item_separator = ", ";  // Python uses "," when an indent is given
  std::string key_separator = ": ";
  bool sort_keys = false;
};

// json.dumps(value, ensure_ascii=False, ...) with Python's exact spacing.
std::string json_dumps(const Value& value, const JsonStyle& style = {});

}  // namespace qmlx::jinja::py
