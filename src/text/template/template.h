// Template: a compiled Jinja template with the semantics of Hugging Face chat templates
// (jinja2 with trim_blocks, lstrip_blocks, loop controls, transformers' tojson,
// raise_exception and strftime_now). Compile once, render many times; rendering is const and
// thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "text/template/value.h"

namespace qmlx::jinja {

struct Node;

class Template {
 public:
  // Throws qmlx::Error "<name>:<line>: <what>" on syntax errors and unsupported constructs.
  explicit Template(std::string_view source, std::string name = "template");
  ~Template();
  Template(Template&&) noexcept;
  Template& operator=(Template&&) noexcept;

  // Each key of the `variables` object becomes a template variable. Use ordered_json so
  // dict key order (visible through tojson) is the caller's.
  std::string render(const nlohmann::ordered_json& variables) const;
  std::string render(const DictObj& variables) const;

  const std::string& name() const { return name_; }

 private:
  std::string name_;
  std::unique_ptr<std::vector<std::unique_ptr<Node>>> body_;
};

}  // namespace qmlx::jinja
