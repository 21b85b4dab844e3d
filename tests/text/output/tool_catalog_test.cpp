#include "text/output/tool_catalog.h"

#include <gtest/gtest.h>

namespace qmlx {
namespace {

TEST(ToolCatalog, IndexesOpenAiBareAndAnthropicEntries) {
  const ToolCatalog tools(nlohmann::json::parse(R"([
    {"type": "function", "function": {"name": "a",
      "parameters": {"properties": {"n": {"type": "integer"}}}}},
    {"name": "b", "parameters": {"properties": {"flag": {"type": "boolean"}}}},
    {"name": "c", "input_schema": {"properties": {"items": {"type": "array"}}}},
    {"type": "function", "function": {"description": "no name"}},
    {"name": 5},
    "not an object"
  ])"));
  EXPECT_TRUE(tools.has("a"));
  EXPECT_TRUE(tools.has("b"));
  EXPECT_TRUE(tools.has("c"));
  EXPECT_FALSE(tools.has("d"));
  EXPECT_FALSE(tools.has(""));
  EXPECT_TRUE(tools.expects_json_value("a", "n"));
  EXPECT_TRUE(tools.expects_json_value("b", "flag"));
  EXPECT_TRUE(tools.expects_json_value("c", "items"));
}

TEST(ToolCatalog, NonArrayToolsGiveAnEmptyCatalog) {
  EXPECT_TRUE(ToolCatalog(nlohmann::json::object()).empty());
  EXPECT_TRUE(ToolCatalog(nlohmann::json()).empty());
  EXPECT_TRUE(ToolCatalog().empty());
}

TEST(ToolCatalog, StringAdmittingSchemasKeepRawText) {
  const ToolCatalog tools(nlohmann::json::parse(R"([{"name": "f", "parameters": {"properties": {
    "s": {"type": "string"},
    "s_or_null": {"type": ["string", "null"]},
    "int_or_null": {"type": ["integer", "null"]},
    "any_of_string": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
    "one_of_numbers": {"oneOf": [{"type": "integer"}, {"type": "number"}]},
    "enum_only": {"enum": ["x", "y"]},
    "null_only": {"type": "null"}
  }}}])"));
  EXPECT_FALSE(tools.expects_json_value("f", "s"));
  EXPECT_FALSE(tools.expects_json_value("f", "s_or_null"));
  EXPECT_TRUE(tools.expects_json_value("f", "int_or_null"));
  EXPECT_FALSE(tools.expects_json_value("f", "any_of_string"));
  EXPECT_TRUE(tools.expects_json_value("f", "one_of_numbers"));
  EXPECT_FALSE(tools.expects_json_value("f", "enum_only"));
  EXPECT_TRUE(tools.expects_json_value("f", "null_only"));
  EXPECT_FALSE(tools.expects_json_value("f", "undeclared"));
  EXPECT_FALSE(tools.expects_json_value("g", "s"));
}

}  // namespace
}  // namespace qmlx
