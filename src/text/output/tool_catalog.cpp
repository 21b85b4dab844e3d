#include "text/output/tool_catalog.h"

#include <vector>

namespace qmlx {
namespace {

const nlohmann::json& function_of(const nlohmann::json& tool) {
  auto it = tool.find("function");
  return it != tool.end() && it->is_object() ? *it : tool;
}

nlohmann::json properties_of(const nlohmann::json& function) {
  for (const char* key : {"parameters", "input_schema"}) {
    auto schema = function.find(key);
    if (schema == function.end() || !schema->is_object()) continue;
    auto properties = schema->find("properties");
    if (properties != schema->end() && properties->is_object()) return *properties;
  }
  return nlohmann::json::object();
}

// The JSON types a schema admits, from "type" (a name or a list of names) and the members of
// "anyOf" / "oneOf".
void collect_types(const nlohmann::json& schema, std::vector<std::string>& types) {
  if (!schema.is_object()) return;
  if (auto type = schema.find("type"); type != schema.end()) {
    if (type->is_string()) types.push_back(type->get<std::string>());
    if (type->is_array()) {
      for (const auto& name : *type) {
        if (name.is_string()) types.push_back(name.get<std::string>());
      }
    }
  }
  for (const char* key : {"anyOf", "oneOf"}) {
    auto members = schema.find(key);
    if (members == schema.end() || !members->is_array()) continue;
    for (const auto& member : *members) collect_types(member, types);
  }
}

}  // namespace

ToolCatalog::ToolCatalog(const nlohmann::json& tools) {
  if (!tools.is_array()) return;
  for (const auto& tool : tools) {
    if (!tool.is_object()) continue;
    const nlohmann::json& function = function_of(tool);
    auto name = function.find("name");
    if (name == function.end() || !name->is_string()) continue;
    properties_by_function_[name->get<std::string>()] = properties_of(function);
  }
}

bool ToolCatalog::has(std::string_view function) const {
  return properties_by_function_.find(function) != properties_by_function_.end();
}

bool ToolCatalog::expects_json_value(std::string_view function, std::string_view parameter) const {
  auto entry = properties_by_function_.find(function);
  if (entry == properties_by_function_.end()) return false;
  auto schema = entry->second.find(std::string(parameter));
  if (schema == entry->second.end()) return false;
  std::vector<std::string> types;
  collect_types(*schema, types);
  if (types.empty()) return false;
  for (const std::string& type : types) {
    if (type == "string") return false;
  }
  return true;
}

}  // namespace qmlx
