// Argument binding for built-in filters, tests, methods and globals: maps positional and
// keyword arguments onto named parameters the way a Python signature does, so templates can
// write `x|join(', ')` or `x|join(d=', ')` alike, and reports misuse by function name.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "text/template/value.h"

namespace qmlx::jinja {

class BoundArguments {
 public:
  // Throws qmlx::Error naming `function` on unknown keywords or too many positionals.
  BoundArguments(const std::string& function, Arguments& args,
                 std::initializer_list<const char*> params);

  bool has(size_t index) const { return values_[index].has_value(); }
  const Value& get(size_t index) const;
  Value get_or(size_t index, Value fallback) const;
  std::optional<std::string> string_or_none(size_t index) const;  // None/absent -> nullopt
  int64_t int_or(size_t index, int64_t fallback) const;
  bool bool_or(size_t index, bool fallback) const;

 private:
  std::string function_;
  std::vector<std::string> names_;
  std::vector<std::optional<Value>> values_;
};

}  // namespace qmlx::jinja
