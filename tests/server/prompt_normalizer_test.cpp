// The prompt normalization rules one by one: each fires on what the real client sends, leaves
// look-alikes alone, is idempotent, and can be switched off.
#include "server/prompt/prompt_normalizer.h"

#include <gtest/gtest.h>

#include "base/error.h"

namespace qmlx::server {
namespace {

using ordered_json = nlohmann::ordered_json;

// What Claude Code 2.1.332 sends as its first system block (captured), and the form of other
// versions with a per-request value.
const char kHeader[] = "x-anthropic-billing-header: cc_version=2.1.332.0b8; cc_entrypoint=sdk-cli;";
const char kHeaderWithCch[] =
    "x-anthropic-billing-header: cc_version=2.1.201.93d; cc_entrypoint=cli; cch=5f1a2;";

PromptNormalizationOptions only(const std::string& rule) {
  PromptNormalizationOptions options;
  for (const PromptNormalizationRule& r : prompt_normalization_rules()) {
    options.set(r.name, r.name == rule);
  }
  return options;
}

GenerationRequest chat(ordered_json messages, ordered_json tools = ordered_json::array()) {
  GenerationRequest r;
  r.route = Route::kMessages;
  r.messages = std::move(messages);
  r.tools = std::move(tools);
  return r;
}

ordered_json system_and_user(const std::string& system) {
  return ordered_json::array(
      {{{"role", "system"}, {"content", system}}, {{"role", "user"}, {"content", "say hi"}}});
}

std::vector<std::string> strip(GenerationRequest& r) {
  return normalize_prompt(r, only("strip_claude_code_billing_header"));
}

TEST(BillingHeader, RecognisesOnlyTheExactForm) {
  const std::string header = kHeader;
  EXPECT_EQ(billing_header_length(header), header.size());
  EXPECT_EQ(billing_header_length(header + "\nYou are"), header.size() + 1);
  EXPECT_EQ(billing_header_length(std::string(kHeaderWithCch) + "\nx"),
            std::string(kHeaderWithCch).size() + 1);
  for (const char* look_alike : {
           "x-anthropic-billing-header:",                            // no field
           "x-anthropic-billing-header: cc_version=2.1.332.0b8",     // no closing ';'
           "x-anthropic-billing-header: cc_version=2.1; and more",   // text after the fields
           "x-anthropic-billing-header: =2.1;",                      // no key
           "x-anthropic-billing-header: cc_version=;",               // no value
           "X-Anthropic-Billing-Header: cc_version=2.1.332.0b8;",    // another spelling
           " x-anthropic-billing-header: cc_version=2.1.332.0b8;",   // not at the start
           "Our x-anthropic-billing-header: cc_version=1; is here",  // quoted in text
           "x-anthropic-billing-header: cc_version=1\n; cc_entrypoint=cli;",  // broken line
       }) {
    EXPECT_EQ(billing_header_length(look_alike), 0u) << look_alike;
  }
}

TEST(BillingHeader, StrippedFromAJoinedSystemMessage) {
  // The Anthropic parser joins system blocks with "\n".
  GenerationRequest r = chat(system_and_user(std::string(kHeader) + "\nYou are a Claude agent."));
  EXPECT_EQ(strip(r), std::vector<std::string>{"strip_claude_code_billing_header"});
  EXPECT_EQ(r.messages[0]["content"], "You are a Claude agent.");
  EXPECT_EQ(r.messages[1]["content"], "say hi");
  EXPECT_TRUE(r.normalized.empty());  // normalize_prompt reports; the caller records

  // Idempotent: a second pass finds nothing.
  GenerationRequest again = r;
  EXPECT_TRUE(strip(again).empty());
  EXPECT_EQ(again.messages, r.messages);
}

TEST(BillingHeader, SessionsThatDifferOnlyInTheHeaderBecomeEqual) {
  GenerationRequest a = chat(system_and_user(std::string(kHeader) + "\nSame prompt."));
  GenerationRequest b = chat(system_and_user(std::string(kHeaderWithCch) + "\nSame prompt."));
  strip(a);
  strip(b);
  EXPECT_EQ(a.messages, b.messages);
}

TEST(BillingHeader, StrippedFromTheFirstTextPartAndFromLaterSystemMessages) {
  ordered_json messages = ordered_json::array(
      {{{"role", "system"},
        {"content", ordered_json::array({{{"type", "text"}, {"text", kHeader}},
                                         {{"type", "text"}, {"text", "Rules."}}})}},
       {{"role", "user"}, {"content", "hi"}},
       {{"role", "developer"}, {"content", std::string(kHeaderWithCch) + "\nMore rules."}}});
  GenerationRequest r = chat(messages);
  EXPECT_EQ(strip(r).size(), 1u);
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_EQ(r.messages[0]["content"],
            ordered_json::array({{{"type", "text"}, {"text", "Rules."}}}));  // empty part dropped
  EXPECT_EQ(r.messages[2]["content"], "More rules.");
}

TEST(BillingHeader, ASystemMessageThatWasOnlyTheHeaderIsDropped) {
  GenerationRequest r = chat(system_and_user(kHeader));
  EXPECT_EQ(strip(r).size(), 1u);
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.messages[0]["role"], "user");
}

TEST(BillingHeader, LeavesUserMessagesAndOtherSystemTextAlone) {
  ordered_json messages = ordered_json::array(
      {{{"role", "system"}, {"content", "You are helpful.\n" + std::string(kHeader)}},
       {{"role", "user"}, {"content", kHeader}},
       {{"role", "assistant"}, {"content", kHeader}}});
  GenerationRequest r = chat(messages);
  EXPECT_TRUE(strip(r).empty());
  EXPECT_EQ(r.messages, messages);
}

ordered_json tool(const std::string& name) {
  return {{"type", "function"},
          {"function", {{"name", name}, {"parameters", {{"type", "object"}}}}}};
}

std::vector<std::string> names(const ordered_json& tools) {
  std::vector<std::string> out;
  for (const auto& t : tools) out.push_back(t["function"].value("name", "?"));
  return out;
}

TEST(CanonicalToolOrder, SortsByNameSoReorderedToolsRenderTheSame) {
  GenerationRequest a = chat(system_and_user("s"), {tool("read_file"), tool("glob"), tool("edit")});
  GenerationRequest b = chat(system_and_user("s"), {tool("edit"), tool("read_file"), tool("glob")});
  EXPECT_EQ(normalize_prompt(a, only("canonical_tool_order")),
            std::vector<std::string>{"canonical_tool_order"});
  normalize_prompt(b, only("canonical_tool_order"));
  EXPECT_EQ(names(a.tools), (std::vector<std::string>{"edit", "glob", "read_file"}));
  EXPECT_EQ(a.tools, b.tools);
  // Idempotent: sorted tools are left as they are and the rule does not count as fired.
  GenerationRequest again = a;
  EXPECT_TRUE(normalize_prompt(again, only("canonical_tool_order")).empty());
  EXPECT_EQ(again.tools, a.tools);
}

TEST(CanonicalToolOrder, StableForEqualAndMissingNames) {
  ordered_json unnamed = {{"type", "web_search"}};
  ordered_json first = tool("same"), second = tool("same");
  first["function"]["description"] = "first";
  second["function"]["description"] = "second";
  GenerationRequest r = chat(system_and_user("s"), {tool("b"), first, unnamed, second});
  normalize_prompt(r, only("canonical_tool_order"));
  ASSERT_EQ(r.tools.size(), 4u);
  EXPECT_EQ(r.tools[0], unnamed);  // no name sorts first, keeping its place among unnamed
  EXPECT_EQ(r.tools[1]["function"]["name"], "b");
  EXPECT_EQ(r.tools[2]["function"]["description"], "first");
  EXPECT_EQ(r.tools[3]["function"]["description"], "second");
}

TEST(PromptNormalization, SwitchedOffRulesDoNothing) {
  PromptNormalizationOptions off;
  for (const PromptNormalizationRule& r : prompt_normalization_rules()) off.set(r.name, false);
  GenerationRequest r = chat(system_and_user(std::string(kHeader) + "\nx"), {tool("b"), tool("a")});
  GenerationRequest before = r;
  EXPECT_TRUE(normalize_prompt(r, off).empty());
  EXPECT_EQ(r.messages, before.messages);
  EXPECT_EQ(r.tools, before.tools);
}

TEST(PromptNormalization, DefaultsAndTableOrder) {
  PromptNormalizationOptions defaults;
  EXPECT_TRUE(defaults.enabled("strip_claude_code_billing_header"));
  EXPECT_FALSE(defaults.enabled("canonical_tool_order"));
  GenerationRequest r = chat(system_and_user(std::string(kHeader) + "\nx"), {tool("b"), tool("a")});
  EXPECT_EQ(normalize_prompt(r, defaults),
            std::vector<std::string>{"strip_claude_code_billing_header"});
  PromptNormalizationOptions all;
  all.set("canonical_tool_order", true);
  r = chat(system_and_user(std::string(kHeader) + "\nx"), {tool("b"), tool("a")});
  EXPECT_EQ(normalize_prompt(r, all),
            (std::vector<std::string>{"strip_claude_code_billing_header", "canonical_tool_order"}));
}

TEST(PromptNormalization, RawCompletionsAreUntouched) {
  GenerationRequest completion;
  completion.route = Route::kCompletions;
  completion.prompt_text = std::string(kHeader) + "\nx";
  PromptNormalizationOptions all;
  all.set("canonical_tool_order", true);
  EXPECT_TRUE(normalize_prompt(completion, all).empty());
  EXPECT_EQ(*completion.prompt_text, std::string(kHeader) + "\nx");
  EXPECT_THROW(PromptNormalizationOptions().set("no_such_rule", true), Error);
}

}  // namespace
}  // namespace qmlx::server
