// ToolChoiceConstraint on its own: what it forces for each tool_choice and format, and when
// (at once, or only after the reasoning block closes), with the fake model's byte tokenizer.
#include "server/scheduling/tool_choice_constraint.h"

#include <gtest/gtest.h>

#include "tests/server/fake_runtime.h"

namespace qmlx::server {
namespace {

GenerationRequest request_with(ToolChoiceMode mode, const std::string& name = "") {
  GenerationRequest r;
  r.tools = nlohmann::ordered_json::parse(
      R"([{"type": "function", "function": {"name": "get_weather", "parameters": {}}}])");
  r.tool_choice = mode;
  r.tool_choice_name = name;
  return r;
}

class ToolChoiceConstraintTest : public ::testing::Test {
 protected:
  // Drains the constraint: the forced tokens, decoded, up to the first step it does not force.
  std::string forced_text(ToolChoiceConstraint& constraint) {
    std::vector<int32_t> ids;
    while (auto token = constraint.forced_token()) {
      ids.push_back(*token);
      constraint.observe(*token);
    }
    return tokenizer().decode(ids);
  }
  void observe_text(ToolChoiceConstraint& constraint, const std::string& text) {
    for (int32_t id : tokenizer().encode(text, true)) constraint.observe(id);
  }
  const Tokenizer& tokenizer() { return *runtime_->tokenizer; }

  std::shared_ptr<ModelRuntime> runtime_ = testing::make_fake_runtime({});
};

TEST_F(ToolChoiceConstraintTest, OpeningPerChoiceAndFormat) {
  using enum ToolChoiceMode;
  EXPECT_EQ(forced_tool_call_opening(request_with(kAuto), ToolCallFormat::kJson), "");
  EXPECT_EQ(forced_tool_call_opening(request_with(kNone), ToolCallFormat::kJson), "");
  EXPECT_EQ(forced_tool_call_opening(request_with(kRequired), ToolCallFormat::kJson),
            "<tool_call>");
  EXPECT_EQ(forced_tool_call_opening(request_with(kRequired), ToolCallFormat::kXml), "<tool_call>");
  EXPECT_EQ(forced_tool_call_opening(request_with(kNamed, "get_weather"), ToolCallFormat::kJson),
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\":");
  EXPECT_EQ(forced_tool_call_opening(request_with(kNamed, "get_weather"), ToolCallFormat::kXml),
            "<tool_call>\n<function=get_weather>\n");
  GenerationRequest no_tools = request_with(kRequired);
  no_tools.tools = nlohmann::ordered_json::array();
  EXPECT_EQ(forced_tool_call_opening(no_tools, ToolCallFormat::kJson), "");
}

TEST_F(ToolChoiceConstraintTest, ForcesTheOpeningAtOnceWhenThePromptDoesNotOpenThink) {
  ToolChoiceConstraint constraint(request_with(ToolChoiceMode::kNamed, "get_weather"),
                                  "<|im_start|>assistant\n", ToolCallFormat::kXml, tokenizer());
  EXPECT_EQ(forced_text(constraint), "<tool_call>\n<function=get_weather>\n");
  // Forced once only: the model writes the rest, and may call more tools after.
  observe_text(constraint, "<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>");
  EXPECT_EQ(constraint.forced_token(), std::nullopt);
}

TEST_F(ToolChoiceConstraintTest, WaitsForTheReasoningToCloseWhenThePromptOpensThink) {
  for (bool one_special_token : {true, false}) {
    ToolChoiceConstraint constraint(request_with(ToolChoiceMode::kRequired),
                                    "<|im_start|>assistant\n<think>\n", ToolCallFormat::kJson,
                                    tokenizer());
    EXPECT_EQ(constraint.forced_token(), std::nullopt);
    observe_text(constraint, "thinking about </thi");  // not closed yet
    EXPECT_EQ(constraint.forced_token(), std::nullopt);
    if (one_special_token) {
      constraint.observe(*tokenizer().token_id("</think>"));
    } else {
      observe_text(constraint, "nk>");  // completes the tag begun in byte tokens
    }
    EXPECT_EQ(forced_text(constraint), "<tool_call>") << one_special_token;
    EXPECT_EQ(constraint.forced_token(), std::nullopt);
  }
}

TEST_F(ToolChoiceConstraintTest, AutoAndNoneNeverForce) {
  for (ToolChoiceMode mode : {ToolChoiceMode::kAuto, ToolChoiceMode::kNone}) {
    ToolChoiceConstraint constraint(request_with(mode), "<|im_start|>assistant\n",
                                    ToolCallFormat::kJson, tokenizer());
    EXPECT_EQ(constraint.forced_token(), std::nullopt);
    observe_text(constraint, "</think>");
    EXPECT_EQ(constraint.forced_token(), std::nullopt);
  }
}

}  // namespace
}  // namespace qmlx::server
