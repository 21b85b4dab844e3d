#include "text/tokenizer/component_json.h"

#include <nlohmann/json.hpp>

namespace qmlx {

std::string component_type(const nlohmann::json& spec, const std::string& kind,
                           const std::string& context) {
  if (!spec.is_object() || !spec.contains("type") || !spec["type"].is_string()) {
    throw Error(context + ": " + kind + " has no \"type\"");
  }
  return spec["type"].get<std::string>();
}

Error unsupported_component(const std::string& kind, const std::string& type,
                            const std::string& context) {
  return Error(context + ": unsupported " + kind + " type \"" + type + "\"");
}

}  // namespace qmlx
