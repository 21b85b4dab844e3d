#include "text/template/template.h"

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "text/template/ast.h"
#include "text/template/interpreter.h"
#include "text/template/lexer.h"
#include "text/template/parser.h"

namespace qmlx::jinja {

Template::Template(std::string_view source, std::string name)
    : name_(std::move(name)),
      body_(std::make_unique<Body>(parse(tokenize(source, name_), name_))) {}

Template::~Template() = default;
Template::Template(Template&&) noexcept = default;
Template& Template::operator=(Template&&) noexcept = default;

std::string Template::render(const nlohmann::ordered_json& variables) const {
  if (!variables.is_object()) throw Error(name_ + ": render variables must be a JSON object");
  DictObj dict;
  for (const auto& [key, value] : variables.items()) dict.set(key, Value::from_json(value));
  return render(dict);
}

std::string Template::render(const DictObj& variables) const {
  return execute(*body_, name_, variables);
}

}  // namespace qmlx::jinja
