// Built-ins: the filters, tests, methods and global functions Hugging Face chat templates
// use, with jinja2's (and transformers') semantics. The parser asks has_filter / has_test so
// an unknown name fails when the template loads, as in jinja2.
#pragma once

#include <string>
#include <string_view>

#include "text/template/value.h"

namespace qmlx::jinja {

bool has_filter(std::string_view name);
bool has_test(std::string_view name);
Value apply_filter(const std::string& name, const Value& operand, Arguments& args);
bool apply_test(const std::string& name, const Value& operand, Arguments& args);

// `object.name`: jinja2 tries the Python attribute (a method such as dict.items or
// str.startswith) before the item, and yields Undefined when neither exists.
Value get_attribute(const Value& object, const std::string& name);
// `object[key]`: the item first, then the attribute.
Value get_item(const Value& object, const Value& key);
// Bound method `name` of a str, dict or list, if the sandbox allows it.
bool find_method(const Value& object, const std::string& name, Value& method);

// The globals every template sees: range, dict, namespace, raise_exception, strftime_now.
void add_global_functions(DictObj& globals);

}  // namespace qmlx::jinja
