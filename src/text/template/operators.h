// Operators: Python semantics for the arithmetic, comparison, membership, iteration and
// slicing that template expressions use. Shared by the interpreter and by filters such as
// sort and unique, so an expression and a filter never disagree on what `<` means.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "text/template/value.h"

namespace qmlx::jinja {

// op is one of + - * / // % ** ~ ; throws qmlx::Error on unsupported operand types.
Value binary_operation(const std::string& op, const Value& left, const Value& right);
Value negate(const Value& operand);

// int(x) for a float: truncated toward zero; throws qmlx::Error for NaN, infinities and values
// outside int64 (Python raises there too; a plain cast would be undefined behaviour).
int64_t float_to_int(double x);

// Python ordering (<0, 0, >0) for numbers, strings and sequences; throws if unordered.
int compare_values(const Value& left, const Value& right);
bool compare(const std::string& op, const Value& left, const Value& right);
// `item in container`.
bool contains(const Value& container, const Value& item);

// The items a for loop or a filter iterates: list items, dict keys, string characters;
// Undefined iterates as empty (jinja2's default Undefined).
std::vector<Value> iterate(const Value& value);
// len(value); Undefined has length 0.
int64_t length(const Value& value);

// value[start:stop:step] on strings and lists (code points for strings).
Value slice(const Value& value, const std::optional<int64_t>& start,
            const std::optional<int64_t>& stop, const std::optional<int64_t>& step);

}  // namespace qmlx::jinja
