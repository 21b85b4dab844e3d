// Whole replies with hand-written expected results, covering each format and each kind of
// malformed output. Every fixture is also checked to parse identically under every split.

#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "parser_test_support.h"
#include "text/output/output_parser.h"

namespace qmlx {
namespace {

using testing::expect_split_invariant;
using testing::options_for;
using testing::plain_options;

struct Fixture {
  std::string name;
  std::string text;
  OutputParserOptions options;
  std::string reasoning;
  std::string content;
  std::vector<std::pair<std::string, std::string>> calls;  // name, arguments_json
};

std::ostream& operator<<(std::ostream& out, const Fixture& fixture) { return out << fixture.name; }

std::string hermes(const std::string& body) { return "<tool_call>\n" + body + "\n</tool_call>"; }

std::string xml_call(const std::string& function,
                     const std::vector<std::pair<std::string, std::string>>& parameters) {
  std::string text = "<tool_call>\n<function=" + function + ">\n";
  for (const auto& [name, value] : parameters) {
    text += "<parameter=" + name + ">\n" + value + "\n</parameter>\n";
  }
  return text + "</function>\n</tool_call>";
}

const OutputParserOptions kJson = options_for(ToolCallFormat::kJson);
const OutputParserOptions kXml = options_for(ToolCallFormat::kXml);
const OutputParserOptions kJsonInThink = options_for(ToolCallFormat::kJson, true);
const OutputParserOptions kXmlInThink = options_for(ToolCallFormat::kXml, true);
const OutputParserOptions kPlain = plain_options();
const OutputParserOptions kPlainInThink = plain_options(true);

const std::string kWeatherJson =
    hermes(R"({"name": "get_weather", "arguments": {"city": "Paris", "days": 3}})");
const std::string kSearchJson = hermes(R"({"name": "search", "arguments": {"query": "qmlx"}})");
const std::string kWeatherXml = xml_call("get_weather", {{"city", "Paris"}, {"days", "3"}});
const std::string kSearchXml = xml_call("search", {{"query", "qmlx"}});

std::vector<Fixture> reasoning_fixtures() {
  return {
      {"think_then_content",
       "<think>\nLet me think.\n</think>\n\nThe answer is 4.",
       kPlain,
       "Let me think.",
       "The answer is 4.",
       {}},
      {"prompt_opened_think", "Hmm.\nOK\n</think>\n\nHi", kPlainInThink, "Hmm.\nOK", "Hi", {}},
      {"prompt_opened_think_leading_newline",
       "\nplan\n</think>\n\nHi",
       kPlainInThink,
       "plan",
       "Hi",
       {}},
      {"no_think", "Just content\n", kPlain, "", "Just content\n", {}},
      {"think_not_at_start_is_content",
       "Hello <think>x</think>",
       kPlain,
       "",
       "Hello <think>x</think>",
       {}},
      {"whitespace_before_think_dropped", "\n <think>a</think>b", kPlain, "a", "b", {}},
      {"empty_think", "<think>\n\n</think>\n\nContent", kPlain, "", "Content", {}},
      {"indentation_kept",
       "<think>\n  indented\n</think>\n  code",
       kPlain,
       "  indented",
       "  code",
       {}},
      {"inner_newlines_kept",
       "<think>\na\n\nb\n</think>\n\nc\n\nd",
       kPlain,
       "a\n\nb",
       "c\n\nd",
       {}},
      {"second_close_is_content", "<think>a</think>b</think>c", kPlain, "a", "b</think>c", {}},
      {"close_without_open_is_content", "a</think>b", kPlain, "", "a</think>b", {}},
      {"reply_is_partial_open_tag", "<thin", kPlain, "", "<thin", {}},
      {"reply_is_only_open_tag", "<think>", kPlain, "", "", {}},
      {"unterminated_think_stays_reasoning",
       "<think>\nstill going\n",
       kPlain,
       "still going\n",
       "",
       {}},
      {"unterminated_think_partial_close",
       "<think>\nstill going\n</thi",
       kPlain,
       "still going\n</thi",
       "",
       {}},
      {"prompt_opened_think_truncated", "half a thought", kPlainInThink, "half a thought", "", {}},
      {"reopen_inside_reasoning_is_reasoning",
       "a<think>b</think>c",
       kPlainInThink,
       "a<think>b",
       "c",
       {}},
  };
}

std::vector<Fixture> json_fixtures() {
  return {
      {"json_single_call",
       kWeatherJson,
       kJson,
       "",
       "",
       {{"get_weather", R"({"city":"Paris","days":3})"}}},
      {"json_content_then_two_calls",
       "Let me check.\n" + kWeatherJson + "\n" + kSearchJson,
       kJson,
       "",
       "Let me check.",
       {{"get_weather", R"({"city":"Paris","days":3})"}, {"search", R"({"query":"qmlx"})"}}},
      {"json_after_reasoning",
       "<think>\nneed weather\n</think>\n\n" + kWeatherJson,
       kJson,
       "need weather",
       "",
       {{"get_weather", R"({"city":"Paris","days":3})"}}},
      {"json_prompt_opened_think",
       "need weather\n</think>\n\n" + kWeatherJson + "\n",
       kJsonInThink,
       "need weather",
       "",
       {{"get_weather", R"({"city":"Paris","days":3})"}}},
      {"json_call_inside_reasoning_not_parsed",
       "<think>" + kWeatherJson + "</think>ok",
       kJson,
       kWeatherJson,
       "ok",
       {}},
      {"json_arguments_as_string",
       hermes(R"({"name": "search", "arguments": "{\"query\": \"x\", \"limit\": 2}"})"),
       kJson,
       "",
       "",
       {{"search", R"({"query":"x","limit":2})"}}},
      {"json_missing_arguments",
       hermes(R"({"name": "no_args"})"),
       kJson,
       "",
       "",
       {{"no_args", "{}"}}},
      {"json_key_order_kept",
       hermes(R"({"name": "search", "arguments": {"query": "q", "limit": 5,
                  "filters": {"b": 1, "a": [true, null]}}})"),
       kJson,
       "",
       "",
       {{"search", R"({"query":"q","limit":5,"filters":{"b":1,"a":[true,null]}})"}}},
      {"json_unicode",
       "天气如何？🌦\n" +
           hermes(R"({"name": "get_weather", "arguments": {"city": "東京 🗼"}})") + "\n好的 👍",
       kJson,
       "",
       "天气如何？🌦好的 👍",
       {{"get_weather", R"({"city":"東京 🗼"})"}}},
      {"json_no_space_framing",
       R"(<tool_call>{"name":"search","arguments":{"query":"a"}}</tool_call>)",
       kJson,
       "",
       "",
       {{"search", R"({"query":"a"})"}}},
      {"json_text_after_last_call",
       kWeatherJson + "\nDone.",
       kJson,
       "",
       "Done.",
       {{"get_weather", R"({"city":"Paris","days":3})"}}},
      {"tool_choice_none_keeps_calls_as_content",
       "Sure.\n" + kWeatherJson,
       kPlain,
       "",
       "Sure.\n" + kWeatherJson,
       {}},
  };
}

std::vector<Fixture> json_malformed_fixtures() {
  const std::string invalid = hermes(R"({name: get_weather})");
  return {
      {"json_unterminated_call",
       "Sure \n<tool_call>\n{\"name\": \"get_weather\"",
       kJson,
       "",
       "Sure \n<tool_call>\n{\"name\": \"get_weather\"",
       {}},
      {"json_invalid_json", "x\n" + invalid, kJson, "", "x\n" + invalid, {}},
      {"json_unknown_function",
       hermes(R"({"name": "rm_rf", "arguments": {}})"),
       kJson,
       "",
       hermes(R"({"name": "rm_rf", "arguments": {}})"),
       {}},
      {"json_missing_name",
       hermes(R"({"arguments": {"city": "Paris"}})"),
       kJson,
       "",
       hermes(R"({"arguments": {"city": "Paris"}})"),
       {}},
      {"json_name_not_string",
       hermes(R"({"name": 7, "arguments": {}})"),
       kJson,
       "",
       hermes(R"({"name": 7, "arguments": {}})"),
       {}},
      {"json_arguments_not_object",
       hermes(R"({"name": "search", "arguments": [1]})"),
       kJson,
       "",
       hermes(R"({"name": "search", "arguments": [1]})"),
       {}},
      {"json_arguments_string_not_json",
       hermes(R"({"name": "search", "arguments": "q=1"})"),
       kJson,
       "",
       hermes(R"({"name": "search", "arguments": "q=1"})"),
       {}},
      {"json_trailing_garbage",
       hermes(R"({"name": "search", "arguments": {}}})"),
       kJson,
       "",
       hermes(R"({"name": "search", "arguments": {}}})"),
       {}},
      {"json_two_objects_in_one_block",
       hermes(R"({"name": "search", "arguments": {}} {"name": "search", "arguments": {}})"),
       kJson,
       "",
       hermes(R"({"name": "search", "arguments": {}} {"name": "search", "arguments": {}})"),
       {}},
      {"json_valid_invalid_valid",
       kWeatherJson + "\n" + invalid + "\n" + kSearchJson,
       kJson,
       "",
       invalid,
       {{"get_weather", R"({"city":"Paris","days":3})"}, {"search", R"({"query":"qmlx"})"}}},
      {"json_nested_open_tag",
       "<tool_call>\n<tool_call>\n" + std::string(R"({"name": "search", "arguments": {}})") +
           "\n</tool_call>",
       kJson,
       "",
       "<tool_call>\n<tool_call>\n" + std::string(R"({"name": "search", "arguments": {}})") +
           "\n</tool_call>",
       {}},
      {"json_close_without_open", "a </tool_call> b", kJson, "", "a </tool_call> b", {}},
      {"json_partial_open_tag_at_end", "see <tool_ca", kJson, "", "see <tool_ca", {}},
      {"json_xml_body_in_json_mode", kWeatherXml, kJson, "", kWeatherXml, {}},
      {"json_no_tools_declared",
       kSearchJson,
       [] {
         OutputParserOptions options = options_for(ToolCallFormat::kJson);
         options.tools = ToolCatalog();
         return options;
       }(),
       "",
       kSearchJson,
       {}},
  };
}

std::vector<Fixture> xml_fixtures() {
  return {
      {"xml_single_call",
       kWeatherXml,
       kXml,
       "",
       "",
       {{"get_weather", R"({"city":"Paris","days":3})"}}},
      {"xml_content_then_two_calls",
       "Checking.\n" + kWeatherXml + "\n" + kSearchXml + "\n",
       kXml,
       "",
       "Checking.",
       {{"get_weather", R"({"city":"Paris","days":3})"}, {"search", R"({"query":"qmlx"})"}}},
      {"xml_after_reasoning",
       "plan\n</think>\n\n" + kSearchXml,
       kXmlInThink,
       "plan",
       "",
       {{"search", R"({"query":"qmlx"})"}}},
      {"xml_multiline_string_keeps_inner_newlines",
       xml_call("search", {{"query", "line1\nline2\n"}}),
       kXml,
       "",
       "",
       {{"search", R"({"query":"line1\nline2\n"})"}}},
      {"xml_typed_values",
       xml_call("search", {{"limit", "2.5"},
                           {"filters", R"({"a": [1, "x"]})"},
                           {"tags", R"([1, "x"])"},
                           {"cursor", "null"},
                           {"page", "7"}}),
       kXml,
       "",
       "",
       {{"search",
         R"({"limit":2.5,"filters":{"a":[1,"x"]},"tags":[1,"x"],"cursor":null,"page":7})"}}},
      {"xml_boolean_and_integer",
       xml_call("get_weather", {{"metric", "true"}, {"days", "10"}}),
       kXml,
       "",
       "",
       {{"get_weather", R"({"metric":true,"days":10})"}}},
      {"xml_string_schema_keeps_raw",
       xml_call("search", {{"query", "123"}, {"note", "null"}}),
       kXml,
       "",
       "",
       {{"search", R"({"query":"123","note":"null"})"}}},
      {"xml_unparsable_typed_value_is_string",
       xml_call("get_weather", {{"days", "three"}}),
       kXml,
       "",
       "",
       {{"get_weather", R"({"days":"three"})"}}},
      {"xml_undeclared_parameter_is_string",
       xml_call("get_weather", {{"unit", "5"}}),
       kXml,
       "",
       "",
       {{"get_weather", R"({"unit":"5"})"}}},
      {"xml_no_parameters", xml_call("no_args", {}), kXml, "", "", {{"no_args", "{}"}}},
      {"xml_unicode",
       "你好 🌍\n" + xml_call("get_weather", {{"city", "東京 🗼"}}) + "\n👋 bye",
       kXml,
       "",
       "你好 🌍👋 bye",
       {{"get_weather", R"({"city":"東京 🗼"})"}}},
      {"xml_json_escapes_in_string",
       xml_call("search", {{"query", "say \"hi\"\\ \t"}}),
       kXml,
       "",
       "",
       {{"search", R"({"query":"say \"hi\"\\ \t"})"}}},
  };
}

std::vector<Fixture> xml_malformed_fixtures() {
  const std::string unknown = xml_call("rm_rf", {{"path", "/"}});
  const std::string no_function_close =
      "<tool_call>\n<function=search>\n<parameter=query>\nq\n</parameter>\n</tool_call>";
  const std::string no_parameter_close =
      "<tool_call>\n<function=search>\n<parameter=query>\nq\n</function>\n</tool_call>";
  const std::string text_after_function =
      "<tool_call>\n<function=search>\n</function>\nextra\n</tool_call>";
  const std::string no_function = "<tool_call>\n<parameter=query>\nq\n</parameter>\n</tool_call>";
  const std::string empty_name = "<tool_call>\n<function=>\n</function>\n</tool_call>";
  const std::string unterminated = "Sure.\n<tool_call>\n<function=search>\n<parameter=query>\nq";
  return {
      {"xml_unknown_function", unknown, kXml, "", unknown, {}},
      {"xml_missing_function_close", no_function_close, kXml, "", no_function_close, {}},
      {"xml_missing_parameter_close", no_parameter_close, kXml, "", no_parameter_close, {}},
      {"xml_text_after_function", text_after_function, kXml, "", text_after_function, {}},
      {"xml_no_function", no_function, kXml, "", no_function, {}},
      {"xml_empty_function_name", empty_name, kXml, "", empty_name, {}},
      {"xml_unterminated_call", unterminated, kXml, "", unterminated, {}},
      {"xml_json_body_in_xml_mode", kWeatherJson, kXml, "", kWeatherJson, {}},
      {"xml_valid_then_unterminated",
       kSearchXml + "\n<tool_call>\n<function=search>",
       kXml,
       "",
       "<tool_call>\n<function=search>",
       {{"search", R"({"query":"qmlx"})"}}},
  };
}

class OutputParserFixture : public ::testing::TestWithParam<Fixture> {};

TEST_P(OutputParserFixture, ParsesToExpectedResultUnderEverySplit) {
  const Fixture& fixture = GetParam();
  const ParsedOutput result = expect_split_invariant(fixture.text, fixture.options);
  EXPECT_EQ(result.reasoning, fixture.reasoning);
  EXPECT_EQ(result.content, fixture.content);
  ASSERT_EQ(result.tool_calls.size(), fixture.calls.size());
  std::set<std::string> ids;
  for (size_t i = 0; i < fixture.calls.size(); ++i) {
    EXPECT_EQ(result.tool_calls[i].name, fixture.calls[i].first);
    EXPECT_EQ(result.tool_calls[i].arguments_json, fixture.calls[i].second);
    EXPECT_TRUE(result.tool_calls[i].id.starts_with("call_")) << result.tool_calls[i].id;
    EXPECT_EQ(result.tool_calls[i].id.size(), 29u);
    ids.insert(result.tool_calls[i].id);
  }
  EXPECT_EQ(ids.size(), fixture.calls.size()) << "ids must be distinct";
}

std::string fixture_name(const ::testing::TestParamInfo<Fixture>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(Reasoning, OutputParserFixture, ::testing::ValuesIn(reasoning_fixtures()),
                         fixture_name);
INSTANTIATE_TEST_SUITE_P(Json, OutputParserFixture, ::testing::ValuesIn(json_fixtures()),
                         fixture_name);
INSTANTIATE_TEST_SUITE_P(JsonMalformed, OutputParserFixture,
                         ::testing::ValuesIn(json_malformed_fixtures()), fixture_name);
INSTANTIATE_TEST_SUITE_P(Xml, OutputParserFixture, ::testing::ValuesIn(xml_fixtures()),
                         fixture_name);
INSTANTIATE_TEST_SUITE_P(XmlMalformed, OutputParserFixture,
                         ::testing::ValuesIn(xml_malformed_fixtures()), fixture_name);

}  // namespace
}  // namespace qmlx
