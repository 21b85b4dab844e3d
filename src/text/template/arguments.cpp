#include "text/template/arguments.h"

#include "base/error.h"

namespace qmlx::jinja {

BoundArguments::BoundArguments(const std::string& function, Arguments& args,
                               std::initializer_list<const char*> params)
    : function_(function), names_(params.begin(), params.end()), values_(params.size()) {
  if (args.positional.size() > params.size()) {
    throw Error(function + "() takes at most " + std::to_string(params.size()) +
                " arguments, got " + std::to_string(args.positional.size()));
  }
  for (size_t i = 0; i < args.positional.size(); ++i) values_[i] = args.positional[i];
  for (auto& [key, value] : args.keyword) {
    size_t i = 0;
    while (i < names_.size() && names_[i] != key) ++i;
    if (i == names_.size()) throw Error(function + "() got an unexpected keyword '" + key + "'");
    values_[i] = value;
  }
}

const Value& BoundArguments::get(size_t index) const {
  if (!values_[index]) {
    throw Error(function_ + "() missing required argument '" + names_[index] + "'");
  }
  return *values_[index];
}

Value BoundArguments::get_or(size_t index, Value fallback) const {
  return values_[index] ? *values_[index] : fallback;
}

std::optional<std::string> BoundArguments::string_or_none(size_t index) const {
  if (!values_[index] || values_[index]->is_none()) return std::nullopt;
  if (!values_[index]->is_string()) {
    throw Error(function_ + "(): argument '" + names_[index] + "' must be a string");
  }
  return values_[index]->as_string();
}

int64_t BoundArguments::int_or(size_t index, int64_t fallback) const {
  if (!values_[index] || values_[index]->is_none()) return fallback;
  if (!values_[index]->is_int() && !values_[index]->is_bool()) {
    throw Error(function_ + "(): argument '" + names_[index] + "' must be an integer");
  }
  return values_[index]->as_int();
}

bool BoundArguments::bool_or(size_t index, bool fallback) const {
  return values_[index] ? values_[index]->truthy() : fallback;
}

}  // namespace qmlx::jinja
