// The scripted model's MTP head (make-model --script --mtp) is right by construction: run through
// the real engine with speculative decoding at temperature 0 on prompts rendered by its chat
// template, the reply is the script exactly, every first draft of a step (the head's row on the
// main model's hidden state) is accepted, and most further drafts (rows on the head's own
// output) are.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "engine/speculative.h"
#include "model/model.h"
#include "modelgen/model_options.h"
#include "modelgen/script_model.h"
#include "text/template/chat_template.h"
#include "text/tokenizer/tokenizer.h"

namespace qmlx::modelgen {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

const std::string kScript =
    "The user wants the weather in Paris. I will call the tool, then answer.\n</think>\n\n"
    "Let me check the forecast for you.\n\n<tool_call>\n<function=get_weather>\n"
    "<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>";

class ScriptMtp : public ::testing::TestWithParam<int> {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("qmlx_script_mtp_" + std::to_string(getpid()));
    ScriptModelOptions options;
    options.mtp = true;
    write_script_model(kScript, options, dir_.string());
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static inline fs::path dir_;
};

TEST_P(ScriptMtp, RepliesWithTheScriptAcceptingEveryDraft) {
  const int k = GetParam();
  auto model = Model::load(dir_.string());
  ASSERT_TRUE(model->has_mtp());
  auto tokenizer = Tokenizer::from_file((dir_ / "tokenizer.json").string());
  const ChatTemplate chat_template = ChatTemplate::from_model_dir(dir_.string());
  const int32_t im_end = tokenizer->encode("<|im_end|>").at(0);
  for (const char* question : {"What is the weather in Paris?", "hi", "Tell me a story."}) {
    const json messages = json::array({{{"role", "user"}, {"content", question}}});
    const std::vector<int32_t> prompt =
        tokenizer->encode(chat_template.render(messages, nullptr, true));
    Session session(model);
    SpeculativeOptions options;
    options.draft_tokens = k;
    SpeculativeDecoder decoder(session, options);
    decoder.prefill(prompt);
    Sampler greedy(SamplingParams{}, -1);
    std::vector<int32_t> generated = {greedy.sample(session.logits())};
    int first_drafts_missed = 0;
    while (generated.back() != im_end && generated.size() < 300) {
      const SpeculativeStep& step = decoder.step(generated.back(), greedy, generated);
      for (int32_t t : step.tokens)
        if (generated.back() != im_end) generated.push_back(t);
      // The last step drafts past <|im_end|>, which the script does not say.
      if (step.accepted == 0 && generated.back() != im_end) ++first_drafts_missed;
    }
    EXPECT_EQ(first_drafts_missed, 0) << question;
    ASSERT_EQ(generated.back(), im_end) << question;
    generated.pop_back();
    EXPECT_EQ(tokenizer->decode(generated), kScript) << question;
    const SpeculativeCounts& c = decoder.counts();
    // Further drafts read the head's own output, which holds no register: a marker drafted
    // just before may be missed.
    EXPECT_GE(c.accepted, c.drafted * 17 / 20)
        << question << ": " << c.accepted << " of " << c.drafted;
    std::printf("k=%d %s: %lld of %lld drafts accepted, %.2f tokens per step\n", k, question,
                static_cast<long long>(c.accepted), static_cast<long long>(c.drafted),
                double(c.tokens) / double(c.steps));
  }
}

INSTANTIATE_TEST_SUITE_P(DraftTokens, ScriptMtp, ::testing::Values(1, 2, 3));

}  // namespace
}  // namespace qmlx::modelgen
