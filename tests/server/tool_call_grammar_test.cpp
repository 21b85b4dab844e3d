// The tool-call grammar (tool_call_grammar.h) bound to the real Qwen3 vocabulary: calls as the
// chat templates write them, tokenized by the real tokenizer, are accepted token by token (each
// token in the mask before it is taken) and end where the turn may end; malformed calls are
// refused at some token. Every accepted call also parses (the output parser's own reading).
#include "server/scheduling/tool_call_grammar.h"

#include <gtest/gtest.h>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/token_mask_tables.h"
#include "grammar/token_vocabulary.h"
#include "tests/server/qwen3_tokenizer.h"
#include "text/output/output_parser.h"
#include "text/tokenizer/tokenizer.h"

namespace qmlx::server {
namespace {

using Json = nlohmann::ordered_json;

constexpr int32_t kImEnd = testing::kQwen3ImEnd;

using testing::qwen3_tokenizer;

std::shared_ptr<const grammar::TokenVocabulary> qwen3_vocabulary() {
  static std::shared_ptr<const grammar::TokenVocabulary> vocab =
      grammar::TokenVocabulary::from_tokenizer(*qwen3_tokenizer(), {kImEnd});
  return vocab;
}

GenerationRequest weather_request() {
  GenerationRequest r;
  r.tools = Json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "parameters": {
      "type": "object", "required": ["city", "days"],
      "properties": {"city": {"type": "string", "description": "a city"},
                     "days": {"type": "integer", "minimum": 1, "maximum": 14},
                     "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                     "tags": {"type": "array", "items": {"type": "string"}}}}}},
    {"type": "function", "function": {"name": "get_time", "parameters": {
      "type": "object", "required": ["zone"], "properties": {"zone": {"type": "string"}}}}}
  ])");
  return r;
}

class ToolCallGrammarTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!qwen3_tokenizer()) GTEST_SKIP() << "npm test packages not installed";
  }

  std::shared_ptr<const grammar::TokenMaskTables> bind(const GenerationRequest& request,
                                                       ToolCallFormat format, bool every_tool) {
    ToolCallGrammar built = build_tool_call_grammar(request, format, every_tool);
    if (built.text.empty()) return nullptr;
    return grammar::TokenMaskTables::build(grammar::compile_grammar(built.text).grammar,
                                           qwen3_vocabulary());
  }

  // Feeds `text` as the real tokenizer encodes it, then <|im_end|>: true when every token was
  // in the mask and accepted. `refused_at` gets the text before the first refused token.
  bool accepts(const std::shared_ptr<const grammar::TokenMaskTables>& tables,
               const std::string& text, std::string* refused_at = nullptr) {
    grammar::GrammarMatcher matcher(tables);
    std::vector<uint64_t> mask(matcher.mask_words());
    std::vector<int32_t> ids = qwen3_tokenizer()->encode(text, true);
    ids.push_back(kImEnd);
    std::string before;
    for (int32_t id : ids) {
      matcher.fill_next_token_bitmask(mask);
      const bool in_mask = (mask[size_t(id) >> 6] >> (id & 63)) & 1;
      const bool accepted = matcher.accept_token(id);
      EXPECT_EQ(in_mask, accepted) << "mask and accept disagree after: " << before;
      if (!accepted) {
        if (refused_at) *refused_at = before;
        return false;
      }
      before += qwen3_tokenizer()->token_bytes(id);
    }
    return matcher.is_terminated();
  }

  static ParsedOutput parse(const std::string& text, const GenerationRequest& request,
                            ToolCallFormat format) {
    OutputParserOptions options;
    options.parse_tool_calls = true;
    options.tool_call_format = format;
    options.tools = ToolCatalog(nlohmann::json(request.tools));
    return parse_output(text, options);
  }
};

const std::string kJsonCall =
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
    "{\"city\": \"Paris \\\"centre\\\"\", \"days\": 3, \"unit\": \"celsius\"}}\n</tool_call>";
const std::string kJsonTimeCall =
    "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}}\n</tool_call>";

TEST_F(ToolCallGrammarTest, JsonCallsAcceptedTokenByTokenAndParsed) {
  GenerationRequest request = weather_request();
  auto tables = bind(request, ToolCallFormat::kJson, true);
  ASSERT_TRUE(tables);
  for (std::string text : {kJsonCall, kJsonTimeCall, kJsonCall + "\n" + kJsonTimeCall}) {
    std::string refused;
    EXPECT_TRUE(accepts(tables, text, &refused)) << text << "\nrefused after: " << refused;
    ParsedOutput parsed = parse(text, request, ToolCallFormat::kJson);
    EXPECT_FALSE(parsed.tool_calls.empty()) << text;
    EXPECT_EQ(parsed.content, "") << text;
  }
}

TEST_F(ToolCallGrammarTest, MalformedJsonCallsRefused) {
  auto tables = bind(weather_request(), ToolCallFormat::kJson, true);
  ASSERT_TRUE(tables);
  const std::vector<std::string> malformed = {
      // a tool that was never offered
      "<tool_call>\n{\"name\": \"get_wether\", \"arguments\": {\"zone\": \"CET\"}}\n</tool_call>",
      // a required argument missing
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\"}}\n</tool_call>",
      // a wrong type, and a value out of range
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": "
      "\"3\"}}"
      "\n</tool_call>",
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 15}}"
      "\n</tool_call>",
      // a value outside the enum
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"P\", \"days\": 3, "
      "\"unit\": \"kelvin\"}}\n</tool_call>",
      // broken JSON: a brace short
      "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}\n</tool_call>",
      // the call never closed (the turn may not end inside it)
      "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}}",
      // text after the calls
      kJsonTimeCall + " done",
      // arguments without the templates' spacing
      "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\":\"CET\"}}\n</tool_call>",
  };
  for (const std::string& text : malformed) EXPECT_FALSE(accepts(tables, text)) << text;
}

TEST_F(ToolCallGrammarTest, ParallelFalseAndNamedNarrowTheGrammar) {
  GenerationRequest request = weather_request();
  request.parallel_tool_calls = false;
  auto single = bind(request, ToolCallFormat::kJson, true);
  EXPECT_TRUE(accepts(single, kJsonTimeCall));
  EXPECT_FALSE(accepts(single, kJsonCall + "\n" + kJsonTimeCall));

  request.parallel_tool_calls = true;
  request.tool_choice = ToolChoiceMode::kNamed;
  request.tool_choice_name = "get_time";
  auto named = bind(request, ToolCallFormat::kJson, true);
  EXPECT_TRUE(accepts(named, kJsonTimeCall));
  EXPECT_FALSE(accepts(named, kJsonCall));
}

TEST_F(ToolCallGrammarTest, StrictToolsOnlyWhenTheConfigIsOff) {
  GenerationRequest request = weather_request();
  // Nothing strict, grammar off: no grammar, calls are free.
  EXPECT_EQ(build_tool_call_grammar(request, ToolCallFormat::kJson, false).text, "");
  // get_time strict: its arguments follow its schema; get_weather's are any JSON object, but
  // its call still follows the syntax and names an offered tool.
  request.strict_tools = {"get_time"};
  auto tables = bind(request, ToolCallFormat::kJson, false);
  ASSERT_TRUE(tables);
  EXPECT_TRUE(accepts(tables, kJsonTimeCall));
  EXPECT_FALSE(accepts(tables,
                       "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": 1}}\n"
                       "</tool_call>"));
  EXPECT_TRUE(accepts(tables,
                      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"days\": \"x\"}}\n"
                      "</tool_call>"));
  EXPECT_FALSE(accepts(
      tables, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": [1]}\n</tool_call>"));
}

TEST_F(ToolCallGrammarTest, UnenforceableKeywordsReportedWithTheTool) {
  GenerationRequest request;
  request.tools = Json::parse(R"([{"type": "function", "function": {"name": "tag", "parameters":
    {"type": "object", "properties": {"ids": {"type": "array", "uniqueItems": true}}}}}])");
  request.strict_tools = {"tag"};
  ToolCallGrammar built = build_tool_call_grammar(request, ToolCallFormat::kJson, false);
  ASSERT_EQ(built.dropped.size(), 1u);
  EXPECT_EQ(built.dropped[0].keyword.keyword, "uniqueItems");
  EXPECT_EQ(built.dropped[0].keyword.path, "/properties/ids");
  EXPECT_TRUE(built.dropped[0].strict);
  EXPECT_NE(built.dropped[0].field.find("tag"), std::string::npos);
}

// Qwen3.5's XML form, as its template writes it: strings raw, other values JSON.
const std::string kXmlCall =
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nSaint-Denis\n<b>north</b> </param\n"
    "</parameter>\n<parameter=days>\n3\n</parameter>\n<parameter=unit>\ncelsius\n</parameter>\n"
    "<parameter=tags>\n[\"a\", \"b\"]\n</parameter>\n</function>\n</tool_call>";
const std::string kXmlTimeCall =
    "<tool_call>\n<function=get_time>\n<parameter=zone>\nCET\n</parameter>\n</function>\n"
    "</tool_call>";

TEST_F(ToolCallGrammarTest, XmlCallsAcceptedTokenByTokenAndParsed) {
  GenerationRequest request = weather_request();
  auto tables = bind(request, ToolCallFormat::kXml, true);
  ASSERT_TRUE(tables);
  for (std::string text : {kXmlCall, kXmlTimeCall, kXmlTimeCall + "\n" + kXmlCall}) {
    std::string refused;
    EXPECT_TRUE(accepts(tables, text, &refused)) << text << "\nrefused after: " << refused;
    ParsedOutput parsed = parse(text, request, ToolCallFormat::kXml);
    ASSERT_FALSE(parsed.tool_calls.empty()) << text;
    EXPECT_EQ(parsed.content, "") << text;
  }
  ParsedOutput parsed = parse(kXmlCall, request, ToolCallFormat::kXml);
  EXPECT_EQ(Json::parse(parsed.tool_calls[0].arguments_json),
            Json::parse(R"({"city": "Saint-Denis\n<b>north</b> </param", "days": 3,
                            "unit": "celsius", "tags": ["a", "b"]})"));
}

TEST_F(ToolCallGrammarTest, MalformedXmlCallsRefused) {
  // Strict tools: only the declared parameters (a tool held by tool_call_grammar alone may
  // also have others after them, see UndeclaredArgumentsUnlessForbidden).
  GenerationRequest request = weather_request();
  request.strict_tools = {"get_weather", "get_time"};
  auto tables = bind(request, ToolCallFormat::kXml, false);
  ASSERT_TRUE(tables);
  const std::vector<std::string> malformed = {
      // a required parameter missing
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n"
      "</tool_call>",
      // a required parameter twice
      "<tool_call>\n<function=get_time>\n<parameter=zone>\nCET\n</parameter>\n<parameter=zone>\n"
      "UTC\n</parameter>\n</function>\n</tool_call>",
      // an integer that is not one
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
      "<parameter=days>\nthree\n</parameter>\n</function>\n</tool_call>",
      // a declared parameter before the required one it follows in the schema
      "<tool_call>\n<function=get_weather>\n<parameter=days>\n3\n</parameter>\n"
      "<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>",
      // a function never offered
      "<tool_call>\n<function=get_date>\n</function>\n</tool_call>",
      // the closing tag missing (the value runs into </function>)
      "<tool_call>\n<function=get_time>\n<parameter=zone>\nCET\n</function>\n</tool_call>",
  };
  for (const std::string& text : malformed) EXPECT_FALSE(accepts(tables, text)) << text;
}

// XML strings are raw text: minLength / maxLength count its code points (text without `<`, so
// it cannot hold `</parameter>`) and a format holds it, with nothing reported (a strict tool
// with them is served); a pattern is still reported.
TEST_F(ToolCallGrammarTest, XmlStringLengthsAndFormatsEnforced) {
  GenerationRequest request;
  request.tools = Json::parse(R"([{"type": "function", "function": {"name": "rename",
    "parameters": {"type": "object", "required": ["name", "id"], "additionalProperties": false,
      "properties": {"name": {"type": "string", "minLength": 2, "maxLength": 12},
                     "id": {"type": "string", "format": "uuid"}}}}}])");
  request.strict_tools = {"rename"};
  EXPECT_TRUE(build_tool_call_grammar(request, ToolCallFormat::kXml, false).dropped.empty());
  auto tables = bind(request, ToolCallFormat::kXml, false);
  ASSERT_TRUE(tables);
  const std::string uuid = "123e4567-e89b-12d3-a456-426614174000";
  auto call = [](const std::string& name, const std::string& id) {
    return "<tool_call>\n<function=rename>\n<parameter=name>\n" + name +
           "\n</parameter>\n<parameter=id>\n" + id + "\n</parameter>\n</function>\n</tool_call>";
  };
  for (const std::string name : {"ab", "Zoë crème", "twelve chars", "two\nlines"}) {
    std::string refused;
    EXPECT_TRUE(accepts(tables, call(name, uuid), &refused))
        << name << ", refused after " << refused;
    ParsedOutput parsed = parse(call(name, uuid), request, ToolCallFormat::kXml);
    ASSERT_EQ(parsed.tool_calls.size(), 1u) << name;
    EXPECT_EQ(Json::parse(parsed.tool_calls[0].arguments_json),
              (Json{{"name", name}, {"id", uuid}}));
  }
  for (const std::string name : {"a", "thirteen char", "a<b", ""})
    EXPECT_FALSE(accepts(tables, call(name, uuid))) << name;
  EXPECT_FALSE(accepts(tables, call("ab", "123e4567-e89b-12d3-a456-42661417400")));  // short
  EXPECT_FALSE(accepts(tables, call("ab", "not a uuid")));

  request.tools[0]["function"]["parameters"]["properties"]["name"]["pattern"] = "^[a-z]+$";
  ToolCallGrammar with_pattern = build_tool_call_grammar(request, ToolCallFormat::kXml, false);
  ASSERT_EQ(with_pattern.dropped.size(), 1u);
  EXPECT_EQ(with_pattern.dropped[0].keyword.keyword, "pattern");
}

// XML strings with listed values: `const` beside `enum` is the const if the enum lists it (both
// hold, as the schema compiler reads them), and no value if not; a `format` beside them is not
// checked against the listed values, so it is reported.
TEST_F(ToolCallGrammarTest, XmlListedStringsHoldConstAndEnumTogetherAndReportAFormat) {
  GenerationRequest request;
  request.tools = Json::parse(R"([{"type": "function", "function": {"name": "pick",
    "parameters": {"type": "object", "required": ["mode"], "additionalProperties": false,
      "properties": {"mode": {"type": "string", "const": "fast",
                              "enum": ["fast", "slow"]}}}}}])");
  request.strict_tools = {"pick"};
  auto call = [](const std::string& mode) {
    return "<tool_call>\n<function=pick>\n<parameter=mode>\n" + mode +
           "\n</parameter>\n</function>\n</tool_call>";
  };
  EXPECT_TRUE(build_tool_call_grammar(request, ToolCallFormat::kXml, false).dropped.empty());
  auto tables = bind(request, ToolCallFormat::kXml, false);
  ASSERT_TRUE(tables);
  EXPECT_TRUE(accepts(tables, call("fast")));
  EXPECT_FALSE(accepts(tables, call("slow")));  // listed by the enum, but not the const

  Json& mode = request.tools[0]["function"]["parameters"]["properties"]["mode"];
  mode["enum"] = Json::array({"slow"});
  tables = bind(request, ToolCallFormat::kXml, false);
  ASSERT_TRUE(tables);
  EXPECT_FALSE(accepts(tables, call("fast")));
  EXPECT_FALSE(accepts(tables, call("slow")));

  mode.erase("const");
  mode["enum"] = Json::array({"2026-12-07", "someday"});
  mode["format"] = "date";
  ToolCallGrammar built = build_tool_call_grammar(request, ToolCallFormat::kXml, false);
  ASSERT_EQ(built.dropped.size(), 1u);
  EXPECT_EQ(built.dropped[0].keyword.keyword, "format");
  EXPECT_EQ(built.dropped[0].keyword.path, "/properties/mode/format");
}

// XML: parameters the schema does not declare are allowed after the declared ones where it
// does not forbid them (JSON Schema's default; models write such ones), for tools held by the
// server's tool_call_grammar; a strict tool, or `additionalProperties: false`, has only its
// declared ones. (JSON arguments keep the schema compiler's reading: only the declared ones,
// unless additionalProperties allows others.)
TEST_F(ToolCallGrammarTest, UndeclaredArgumentsUnlessForbidden) {
  GenerationRequest request = weather_request();  // get_time: no additionalProperties
  const std::string xml_extra =
      "<tool_call>\n<function=get_time>\n<parameter=zone>\nCET\n</parameter>\n"
      "<parameter=description>\nnow\n</parameter>\n</function>\n</tool_call>";
  EXPECT_TRUE(accepts(bind(request, ToolCallFormat::kXml, true), xml_extra));
  GenerationRequest closed = request;
  closed.tools[1]["function"]["parameters"]["additionalProperties"] = false;
  EXPECT_FALSE(accepts(bind(closed, ToolCallFormat::kXml, true), xml_extra));
  GenerationRequest strict = request;
  strict.strict_tools = {"get_time"};
  EXPECT_FALSE(accepts(bind(strict, ToolCallFormat::kXml, false), xml_extra));

  const std::string json_extra =
      "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\", "
      "\"description\": \"now\"}}\n</tool_call>";
  EXPECT_FALSE(accepts(bind(request, ToolCallFormat::kJson, true), json_extra));
  GenerationRequest open = request;
  open.tools[1]["function"]["parameters"]["additionalProperties"] = true;
  EXPECT_TRUE(accepts(bind(open, ToolCallFormat::kJson, true), json_extra));
}

}  // namespace
}  // namespace qmlx::server
