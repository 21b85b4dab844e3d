#include "grammar/json_schema_compiler.h"

#include <gtest/gtest.h>

#include "grammar_test_support.h"

namespace qmlx::grammar {
namespace {

using Json = nlohmann::ordered_json;
using test_support::accepts;

CompiledGrammar compile(const char* schema_text) {
  return compile_json_schema(Json::parse(schema_text));
}

// Tool-call arguments take the chat templates' spacing (", " and ": "), everywhere a separator
// is written: declared members, extra members, items, and any JSON value.
TEST(JsonSchemaCompiler, SpaceAfterSeparators) {
  SchemaOptions options;
  options.item_space = options.key_space = " ";
  auto g = compile_json_schema(Json::parse(R"({"type": "object", "required": ["a"],
      "properties": {"a": {"type": "array", "items": {"type": "integer"}}, "b": {}},
      "additionalProperties": {"type": "boolean"}})"),
                               options);
  EXPECT_TRUE(accepts(g, R"({"a": [1, 2], "b": {"x": [true, null]}, "c": false})"));
  EXPECT_TRUE(accepts(g, R"({"a": []})"));
  EXPECT_FALSE(accepts(g, R"({"a":[1,2]})"));
  EXPECT_FALSE(accepts(g, R"({"a": [1,2]})"));
  EXPECT_FALSE(accepts(g, R"({"a": [1], "b": {"x":1}})"));
  EXPECT_FALSE(accepts(g, R"({"a": [1],"c": false})"));
  // The canonical form is unchanged by default.
  EXPECT_TRUE(accepts(compile(R"({"type": "array"})"), R"([1,{"a":2}])"));
  EXPECT_FALSE(accepts(compile(R"({"type": "array"})"), R"([1, 2])"));
}

TEST(JsonSchemaCompiler, Types) {
  auto g = compile(R"({"type": "integer"})");
  EXPECT_TRUE(accepts(g, "0"));
  EXPECT_TRUE(accepts(g, "-12"));
  EXPECT_FALSE(accepts(g, "01"));
  EXPECT_FALSE(accepts(g, "1.5"));
  g = compile(R"({"type": ["string", "null"]})");
  EXPECT_TRUE(accepts(g, "null"));
  EXPECT_TRUE(accepts(g, R"("a\"b\\c\n")"));
  EXPECT_FALSE(accepts(g, "1"));
  EXPECT_FALSE(accepts(g, R"("\/")"));  // not the canonical escape
  g = compile(R"({"type": "number"})");
  for (const char* ok : {"0", "-1.25", "1e+100", "2.5E-3"}) EXPECT_TRUE(accepts(g, ok)) << ok;
  EXPECT_FALSE(accepts(g, ".5"));
  g = compile(R"({"type": "boolean"})");
  EXPECT_TRUE(accepts(g, "false"));
  EXPECT_FALSE(accepts(g, "null"));
  g = compile(R"({})");
  EXPECT_TRUE(accepts(g, R"({"a":[1,{"b":null}],"c":"x"})"));
  EXPECT_FALSE(accepts(g, R"({"a": 1})"));  // no whitespace in canonical output
}

TEST(JsonSchemaCompiler, PropertiesInSchemaOrderWithRequiredAndOptional) {
  auto g = compile(
      R"({"type": "object", "properties": {"b": {"type": "integer"}, "a": {"type": "string"},
                       "c": {"type": "boolean"}}, "required": ["a"]})");
  EXPECT_TRUE(accepts(g, R"({"a":"x"})"));
  EXPECT_TRUE(accepts(g, R"({"b":1,"a":"x","c":true})"));
  EXPECT_TRUE(accepts(g, R"({"a":"x","c":false})"));
  EXPECT_FALSE(accepts(g, R"({"a":"x","b":1})"));  // not in schema order
  EXPECT_FALSE(accepts(g, R"({"b":1})"));          // a is required
  EXPECT_FALSE(accepts(g, R"({"a":"x","d":1})"));  // no extras when properties are given
  EXPECT_FALSE(accepts(g, R"({,"a":"x"})"));
}

TEST(JsonSchemaCompiler, AdditionalPropertiesExcludeDeclaredNames) {
  auto g = compile(
      R"({"properties": {"foo": {}, "fo\"o": {}}, "additionalProperties": {"type": "boolean"}})");
  EXPECT_TRUE(accepts(g, R"({"foo":1,"bar":true})"));
  EXPECT_TRUE(accepts(g, R"({"bar":true,"fo":false,"fooo":true,"fo\\":true})"));
  EXPECT_FALSE(accepts(g, R"({"bar":1})"));
  EXPECT_FALSE(accepts(g, R"({"bar":true,"foo":true})"));  // a declared name as an extra
  EXPECT_FALSE(accepts(g, R"({"bar":true,"fo\"o":true})"));
  g = compile(R"({"type": "object", "additionalProperties": false})");
  EXPECT_TRUE(accepts(g, "{}"));
  EXPECT_FALSE(accepts(g, R"({"a":1})"));
  g = compile(R"({"type": "object"})");
  EXPECT_TRUE(accepts(g, R"({"a":1,"b":{}})"));
  // A required name that is not declared is written after the declared ones, with any value.
  g = compile(R"({"properties": {"a": {"type": "null"}}, "required": ["b"]})");
  EXPECT_TRUE(accepts(g, R"({"a":null,"b":[1]})"));
  EXPECT_TRUE(accepts(g, R"({"b":"x"})"));
  EXPECT_FALSE(accepts(g, R"({"a":null})"));
  g = compile(
      R"({"properties": {"a": {}}, "required": ["b"], "additionalProperties": {"type": "integer"}})");
  EXPECT_TRUE(accepts(g, R"({"b":1})"));
  EXPECT_FALSE(accepts(g, R"({"b":"x"})"));
}

TEST(JsonSchemaCompiler, Arrays) {
  auto g =
      compile(R"({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 3})");
  EXPECT_FALSE(accepts(g, "[1]"));
  EXPECT_TRUE(accepts(g, "[1,2]"));
  EXPECT_TRUE(accepts(g, "[1,2,3]"));
  EXPECT_FALSE(accepts(g, "[1,2,3,4]"));
  EXPECT_FALSE(accepts(g, "[1,\"a\"]"));
  g = compile(R"({"prefixItems": [{"type": "string"}, {"type": "null"}], "items": false})");
  EXPECT_TRUE(accepts(g, "[]"));
  EXPECT_TRUE(accepts(g, R"(["a"])"));
  EXPECT_TRUE(accepts(g, R"(["a",null])"));
  EXPECT_FALSE(accepts(g, R"(["a",null,1])"));
  EXPECT_FALSE(accepts(g, R"([null])"));
  g = compile(
      R"({"items": [{"type": "integer"}], "additionalItems": {"type": "boolean"}, "minItems": 2})");
  EXPECT_TRUE(accepts(g, "[1,true,false]"));
  EXPECT_FALSE(accepts(g, "[1]"));
  EXPECT_FALSE(accepts(g, "[1,2]"));
  g = compile(R"({"type": "array", "maxItems": 0})");
  EXPECT_TRUE(accepts(g, "[]"));
  EXPECT_FALSE(accepts(g, "[1]"));
}

TEST(JsonSchemaCompiler, EnumAndConstAreCanonicalLiterals) {
  auto g = compile(R"({"enum": [1.0, "a\nb", {"x": [true]}, null]})");
  EXPECT_TRUE(accepts(g, "1"));
  EXPECT_TRUE(accepts(g, R"("a\nb")"));
  EXPECT_TRUE(accepts(g, R"({"x":[true]})"));
  EXPECT_TRUE(accepts(g, "null"));
  EXPECT_FALSE(accepts(g, "1.0"));
  EXPECT_FALSE(accepts(g, "2"));
  g = compile(R"({"type": "string", "enum": ["a", 1]})");
  EXPECT_TRUE(accepts(g, R"("a")"));
  EXPECT_FALSE(accepts(g, "1"));
  g = compile(R"({"const": "k"})");
  EXPECT_TRUE(accepts(g, R"("k")"));
  EXPECT_FALSE(accepts(g, R"("kk")"));
}

TEST(JsonSchemaCompiler, AnyOfOneOfAllOf) {
  auto g = compile(R"({"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 1}]})");
  EXPECT_TRUE(accepts(g, "3"));
  EXPECT_TRUE(accepts(g, R"("x")"));
  EXPECT_FALSE(accepts(g, R"("xy")"));
  g = compile(R"({"oneOf": [{"type": "integer"}, {"type": "string"}]})");
  EXPECT_TRUE(g.unsupported.empty());
  g = compile(R"({"oneOf": [{"type": "integer"}, {"type": "integer", "minimum": 2}]})");
  ASSERT_EQ(g.unsupported.size(), 1u);
  EXPECT_EQ(g.unsupported[0], (UnsupportedKeyword{"oneOf", ""}));
  g = compile(
      R"({"oneOf": [{"properties": {"k": {"const": "a"}, "v": {"type": "integer"}}, "required": ["k"]},
                            {"properties": {"k": {"const": "b"}}, "required": ["k"]}]})");
  EXPECT_TRUE(g.unsupported.empty());  // a discriminator makes the branches disjoint
  g = compile(R"({"allOf": [{"properties": {"a": {"type": "integer"}}, "required": ["a"]},
                            {"properties": {"b": {"type": "string"}}, "required": ["b"]}]})");
  EXPECT_TRUE(accepts(g, R"({"a":1,"b":"x"})"));
  EXPECT_FALSE(accepts(g, R"({"a":1})"));
  g = compile(R"({"type": "string", "anyOf": [{"maxLength": 1}, {"const": "abc"}]})");
  EXPECT_TRUE(accepts(g, R"("abc")"));
  EXPECT_FALSE(accepts(g, "1"));
}

TEST(JsonSchemaCompiler, RefsAndRecursion) {
  auto g = compile(R"({"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
                       "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}}, "required": ["v", "next"]}},
                       "$ref": "#/$defs/node"})");
  EXPECT_TRUE(accepts(g, R"({"v":1,"next":{"v":2,"next":null}})"));
  EXPECT_FALSE(accepts(g, R"({"v":1,"next":{"v":2}})"));
  g = compile(
      R"({"definitions": {"a b": {"type": "null"}}, "items": {"$ref": "#/definitions/a%20b"}})");
  EXPECT_TRUE(accepts(g, "[null,null]"));
  EXPECT_THROW(compile(R"({"$ref": "#/nowhere"})"), GrammarError);
}

TEST(JsonSchemaCompiler, StringLengthsCountCodePoints) {
  auto g = compile(R"({"type": "string", "minLength": 2, "maxLength": 3})");
  EXPECT_FALSE(accepts(g, R"("a")"));
  EXPECT_TRUE(accepts(g, R"("é😀")"));
  EXPECT_TRUE(accepts(g, R"("a\nb")"));
  EXPECT_FALSE(accepts(g, R"("abcd")"));
  // Long bounds are one counted repetition, not copies of the character automaton.
  g = compile(R"({"type": "string", "minLength": 20, "maxLength": 100})");
  EXPECT_TRUE(g.unsupported.empty());
  EXPECT_EQ(g.grammar->repeats.size(), 1u);
  EXPECT_LT(g.grammar->nodes.size(), 100u);
  EXPECT_FALSE(accepts(g, "\"" + std::string(19, 'x') + "\""));
  EXPECT_TRUE(accepts(g, "\"" + std::string(20, 'x') + "\""));
  EXPECT_TRUE(accepts(g, "\"" + std::string(100, 'x') + "\""));
  EXPECT_FALSE(accepts(g, "\"" + std::string(101, 'x') + "\""));
  g = compile(R"({"type": "string", "maxLength": 10000})");
  EXPECT_TRUE(g.unsupported.empty());
  // Bounds above SchemaOptions::max_string_length (10,000) are reported and dropped.
  g = compile(R"({"type": "string", "minLength": 3, "maxLength": 20000})");
  EXPECT_EQ(g.unsupported, (std::vector<UnsupportedKeyword>{{"maxLength", ""}}));
  EXPECT_FALSE(accepts(g, R"("ab")"));
  EXPECT_TRUE(accepts(g, "\"" + std::string(25000, 'x') + "\""));
}

TEST(JsonSchemaCompiler, Patterns) {
  auto g = compile(R"({"type": "string", "pattern": "^[a-z]+-\\d{2,3}$"})");
  EXPECT_TRUE(accepts(g, R"("ab-12")"));
  EXPECT_TRUE(accepts(g, R"("ab-123")"));
  EXPECT_FALSE(accepts(g, R"("ab-1")"));
  EXPECT_FALSE(accepts(g, R"("Ab-12")"));
  g = compile(R"j({"type": "string", "pattern": "a(b|c)"})j");  // unanchored
  EXPECT_TRUE(accepts(g, R"("xxacyy")"));
  EXPECT_FALSE(accepts(g, R"("xxadyy")"));
  g = compile(R"({"type": "string", "pattern": "^\"\\\\$"})");  // a quote then a backslash
  EXPECT_TRUE(accepts(g, R"("\"\\")"));
  g = compile(R"j({"type": "string", "pattern": "(?=a)"})j");
  ASSERT_EQ(g.unsupported.size(), 1u);
  EXPECT_EQ(g.unsupported[0].keyword, "pattern");
}

TEST(JsonSchemaCompiler, IntegerBounds) {
  auto g = compile(R"({"type": "integer", "minimum": -15, "exclusiveMaximum": 213})");
  for (int i = -30; i < 300; ++i)
    EXPECT_EQ(accepts(g, std::to_string(i)), i >= -15 && i < 213) << i;
  g = compile(R"({"type": "integer", "exclusiveMinimum": 99})");
  EXPECT_FALSE(accepts(g, "99"));
  EXPECT_TRUE(accepts(g, "100"));
  EXPECT_TRUE(accepts(g, "123456789012345678901234"));
  EXPECT_FALSE(accepts(g, "-5"));
  g = compile(R"({"type": "integer", "maximum": -7.5})");
  EXPECT_TRUE(accepts(g, "-8"));
  EXPECT_FALSE(accepts(g, "-7"));
  EXPECT_TRUE(accepts(g, "-100000000000000000000000"));
}

TEST(JsonSchemaCompiler, Formats) {
  auto date = compile(R"({"type": "string", "format": "date"})");
  EXPECT_TRUE(accepts(date, R"("2024-02-29")"));
  EXPECT_TRUE(accepts(date, R"("2000-02-29")"));
  EXPECT_FALSE(accepts(date, R"("1900-02-29")"));
  EXPECT_FALSE(accepts(date, R"("2023-02-29")"));
  EXPECT_FALSE(accepts(date, R"("2023-04-31")"));
  EXPECT_TRUE(accepts(date, R"("2023-12-31")"));
  auto dt = compile(R"({"type": "string", "format": "date-time"})");
  EXPECT_TRUE(accepts(dt, R"("2023-06-01T23:59:59.123+05:30")"));
  EXPECT_TRUE(accepts(dt, R"("2023-06-01T00:00:00Z")"));
  EXPECT_FALSE(accepts(dt, R"("2023-06-01T24:00:00Z")"));
  EXPECT_FALSE(accepts(dt, R"("2023-06-01T10:00:00")"));  // the offset is required
  auto time = compile(R"({"type": "string", "format": "time"})");
  EXPECT_TRUE(accepts(time, R"("08:30:06-02:00")"));
  auto uuid = compile(R"({"type": "string", "format": "uuid"})");
  EXPECT_TRUE(accepts(uuid, R"("123e4567-e89b-12d3-a456-426614174000")"));
  EXPECT_FALSE(accepts(uuid, R"("123e4567e89b12d3a456426614174000")"));
  auto email = compile(R"({"type": "string", "format": "email"})");
  EXPECT_TRUE(accepts(email, R"("joe.bloggs+x@example.co.uk")"));
  EXPECT_FALSE(accepts(email, R"("joe..bloggs@example.com")"));
  EXPECT_FALSE(accepts(email, R"("joe@")"));
  auto ipv4 = compile(R"({"type": "string", "format": "ipv4"})");
  EXPECT_EQ(ipv4.unsupported, (std::vector<UnsupportedKeyword>{{"format", ""}}));
}

TEST(JsonSchemaCompiler, UnsupportedKeywordsAreListedWithTheirPath) {
  auto g = compile(R"({"properties": {"tags": {"type": "array", "uniqueItems": true},
                       "n": {"type": "number", "minimum": 0.5}, "m": {"not": {}}},
                       "patternProperties": {"^x": {}}, "title": "ignored"})");
  std::vector<UnsupportedKeyword> expected = {{"uniqueItems", "/properties/tags"},
                                              {"minimum", "/properties/n"},
                                              {"not", "/properties/m"},
                                              {"patternProperties", ""}};
  auto sorted = [](std::vector<UnsupportedKeyword> v) {
    std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.keyword < b.keyword; });
    return v;
  };
  EXPECT_EQ(sorted(g.unsupported), sorted(expected));
}

TEST(JsonSchemaCompiler, LimitsAreErrorsNamingTheLimit) {
  auto limit_of = [](const Json& schema, SchemaOptions options) {
    try {
      compile_json_schema(schema, options);
    } catch (const GrammarError& e) {
      return e.limit();
    }
    return std::string();
  };
  Json deep = Json::object();
  for (int i = 0; i < 100; ++i) deep = Json{{"items", deep}};
  EXPECT_EQ(limit_of(deep, {}), "max_schema_depth");
  SchemaOptions small;
  small.max_schema_bytes = 1000;
  EXPECT_EQ(limit_of(Json{{"description", std::string(2000, 'x')}}, small), "max_schema_bytes");
  SchemaOptions few_nodes;
  few_nodes.grammar_limits.max_nodes = 200;
  few_nodes.grammar_limits.max_unrolled_repeat = 1000;  // copies, as before counted repetition
  EXPECT_EQ(limit_of(Json::parse(R"({"type": "string", "maxLength": 100})"), few_nodes),
            "max_grammar_nodes");
  SchemaOptions no_time;
  no_time.max_depth = 200;
  no_time.max_compile_time = std::chrono::milliseconds(0);
  EXPECT_EQ(limit_of(deep, no_time), "max_compile_ms");
}

}  // namespace
}  // namespace qmlx::grammar
