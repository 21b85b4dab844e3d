// The scripted model with an after-tool script (--script-after-tool), run through the real
// engine at temperature 0 on prompts rendered by its own chat template: every prompt without a
// tool result continues with the main script, every prompt with one with the after-tool
// script, each exactly, so a client's tool round trip ends instead of calling the tool again.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "engine/sampler.h"
#include "engine/session.h"
#include "model/model.h"
#include "modelgen/model_options.h"
#include "modelgen/script_model.h"
#include "text/template/chat_template.h"
#include "text/tokenizer/tokenizer.h"

namespace qmlx::modelgen {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

const std::string kToolCallScript =
    "<think>\nI will write the file with the shell.\n</think>\n\n<tool_call>\n"
    "<function=run_shell_command>\n<parameter=command>\necho ran > out.txt\n</parameter>\n"
    "</function>\n</tool_call>";
const std::string kAfterToolScript = "The command ran; out.txt is written. Done.";

class ScriptAfterTool : public ::testing::TestWithParam<Arch> {
 protected:
  void SetUp() override {
    // One directory per process: ctest runs this suite's tests in parallel, and a model file
    // rewritten under another test's mapping kills that test with SIGBUS.
    dir_ = fs::temp_directory_path() /
           ("qmlx_script_after_tool_" + std::string(arch_name(GetParam())) + "_" +
            std::to_string(getpid()));
    ScriptModelOptions options;
    options.template_arch = GetParam();
    options.script_after_tool = kAfterToolScript;
    write_script_model(kToolCallScript, options, dir_.string());
    model_ = Model::load(dir_.string());
    tokenizer_ = Tokenizer::from_file((dir_ / "tokenizer.json").string());
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The model's greedy reply to `messages` (as a server renders them), up to <|im_end|>.
  std::string reply(const json& messages, const json& tools = nullptr) const {
    const ChatTemplate chat_template = ChatTemplate::from_model_dir(dir_.string());
    const std::vector<int32_t> prompt =
        tokenizer_->encode(chat_template.render(messages, tools, /*add_generation_prompt=*/true));
    const int32_t im_end = tokenizer_->encode("<|im_end|>").at(0);
    Session session(model_);
    session.prefill(prompt);
    Sampler greedy(SamplingParams{}, -1);
    std::vector<int32_t> generated;
    while (generated.size() < 200) {
      const int32_t next = greedy.sample(session.logits());
      if (next == im_end) return tokenizer_->decode(generated);
      generated.push_back(next);
      session.decode(next);
    }
    return "(no <|im_end|> after 200 tokens) " + tokenizer_->decode(generated);
  }

  static json shell_tool() {
    return json::parse(R"j([{"type": "function", "function": {"name": "run_shell_command",
        "description": "Runs a shell command", "parameters": {"type": "object",
        "properties": {"command": {"type": "string"}}, "required": ["command"]}}}])j");
  }
  static json tool_round_trip() {
    return json::parse(R"j([
      {"role": "system", "content": "You are a coding agent."},
      {"role": "user", "content": "Write out.txt."},
      {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function",
        "function": {"name": "run_shell_command", "arguments": {"command": "echo ran > out.txt"}}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "(no output)"}])j");
  }

  fs::path dir_;
  std::shared_ptr<const Model> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

TEST_P(ScriptAfterTool, PromptsWithoutAToolResultGetTheMainScript) {
  EXPECT_EQ(reply(json::parse(R"j([{"role": "user", "content": "hi"}])j")), kToolCallScript);
  EXPECT_EQ(reply(json::parse(R"j([{"role": "system", "content": "Be brief."},
      {"role": "user", "content": "Write out.txt, please."}])j"),
                  shell_tool()),
            kToolCallScript);
  // A multi-turn conversation whose earlier answer was plain text.
  EXPECT_EQ(reply(json::parse(R"j([{"role": "user", "content": "hello"},
      {"role": "assistant", "content": "Hello! How can I help?"},
      {"role": "user", "content": "Now write out.txt."}])j"),
                  shell_tool()),
            kToolCallScript);
}

TEST_P(ScriptAfterTool, PromptsWithAToolResultGetTheAfterToolScript) {
  json messages = tool_round_trip();
  EXPECT_EQ(reply(messages, shell_tool()), kAfterToolScript);
  // The next turn of the same conversation still holds the tool result.
  messages.push_back({{"role", "assistant"}, {"content", kAfterToolScript}});
  messages.push_back({{"role", "user"}, {"content", "Thanks. And now?"}});
  EXPECT_EQ(reply(messages, shell_tool()), kAfterToolScript);
}

INSTANTIATE_TEST_SUITE_P(Templates, ScriptAfterTool, ::testing::Values(Arch::kQwen35, Arch::kQwen3),
                         [](const auto& info) { return std::string(arch_name(info.param)); });

TEST(ScriptModel, AfterToolScriptsMayNotContainTheToolResponseToken) {
  const auto dir = fs::temp_directory_path() / "qmlx_script_after_tool_rejected";
  ScriptModelOptions options;
  options.script_after_tool = "done <tool_response>";
  EXPECT_THROW(write_script_model("call", options, dir.string()), std::exception);
  options.script_after_tool = "";
  EXPECT_THROW(write_script_model("call", options, dir.string()), std::exception);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace qmlx::modelgen
