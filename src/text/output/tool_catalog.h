// The tools a request declared, indexed by function name. The output parser uses it to reject
// calls to functions the client never offered (such text stays content) and to type the raw
// parameter values of XML tool calls by each parameter's JSON schema.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace qmlx {

class ToolCatalog {
 public:
  ToolCatalog() = default;
  // `tools` is the request's array of OpenAI-style entries, {"type": "function", "function":
  // {"name": ..., "parameters": {...}}}, or bare {"name": ..., "parameters": ...} objects
  // (Anthropic's "input_schema" is accepted for "parameters"). Entries without a string name
  // are skipped: validating the request is the server's job.
  explicit ToolCatalog(const nlohmann::json& tools);

  bool empty() const { return properties_by_function_.empty(); }
  bool has(std::string_view function) const;

  // True when the schema of `parameter` admits only non-string JSON types (integer, number,
  // boolean, object, array, null), so its raw text should be parsed as JSON. False for string
  // parameters, schemas that allow a string, and parameters the schema does not describe.
  bool expects_json_value(std::string_view function, std::string_view parameter) const;

 private:
  // Function name -> its parameters' "properties" object (empty object when absent).
  std::map<std::string, nlohmann::json, std::less<>> properties_by_function_;
};

}  // namespace qmlx
