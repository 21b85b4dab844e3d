// What a streamed reply has delivered (issue 17 row 14): each output event says how many
// generated tokens its text and the earlier events' hold in full (settled_tokens), never counting
// text the stop matcher, the output parser or an unfinished UTF-8 character still holds back; and
// a job cut short hands on_interrupted the prompt plus exactly the tokens the client received,
// however far generation had run ahead of it.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server/scheduling/generation_runner.h"
#include "tests/server/fake_runtime.h"

namespace qmlx::server {
namespace {

using ordered_json = nlohmann::ordered_json;

struct Received {
  std::string text;                  // every event's content and reasoning, in order
  std::vector<int64_t> settled;      // each event's settled_tokens
  std::vector<std::string> text_at;  // the text received up to each event
  std::vector<int32_t> generated;    // from kDone
};

class DeliveredTokensTest : public ::testing::Test {
 protected:
  void start(const std::string& script, int decode_delay_ms = 0) {
    runtime_ = testing::make_fake_runtime({.script = script, .decode_delay_ms = decode_delay_ms});
    session_ = runtime_->new_session();
  }

  std::shared_ptr<GenerationJob> completion(std::vector<std::string> stops = {}) {
    GenerationRequest request;
    request.route = Route::kCompletions;
    request.stream = true;
    request.max_tokens = 200;
    request.sampling.temperature = 0;
    request.logprobs = true;  // an event for every token, held-back text or not
    request.stop = std::move(stops);
    RenderedPrompt prompt;
    prompt.ids = runtime_->tokenizer->encode("Say it: ", false);
    request.prompt_ids = prompt.ids;
    return std::make_shared<GenerationJob>(1, std::move(request), std::move(prompt));
  }

  std::shared_ptr<GenerationJob> chat_with_tools() {
    GenerationRequest request;
    request.route = Route::kChatCompletions;
    request.stream = true;
    request.max_tokens = 200;
    request.sampling.temperature = 0;
    request.logprobs = true;
    request.messages = ordered_json::array({{{"role", "user"}, {"content", "read it"}}});
    request.tools = ordered_json::parse(R"([{"type": "function", "function": {"name": "read_file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}])");
    RenderedPrompt prompt =
        runtime_->render_chat(request.messages, request.tools, true, ordered_json::object());
    return std::make_shared<GenerationJob>(1, std::move(request), std::move(prompt));
  }

  // Runs the job to its end on an engine thread; `on_event` may cancel it.
  Received run(GenerationJob& job, const std::function<void(const Received&)>& on_event = {}) {
    std::thread engine([&] { run_generation(job, *session_, *runtime_, hooks_); });
    Received got;
    for (;;) {
      auto event = job.next(std::chrono::seconds(10));
      if (!event) break;
      if (event->kind == GenerationEvent::Kind::kOutput) {
        got.text += event->delta.reasoning + event->delta.content;
        for (const ToolCallDelta& call : event->delta.tool_calls) got.text += "[" + call.name + "]";
        got.settled.push_back(event->settled_tokens);
        got.text_at.push_back(got.text);
        if (on_event) on_event(got);
      } else if (event->kind == GenerationEvent::Kind::kDone) {
        got.generated = event->generated;
        break;
      }
    }
    engine.join();
    return got;
  }

  // The text of the first n ids (special tokens as text, unless skipped).
  std::string decode_first(const std::vector<int32_t>& ids, int64_t n,
                           bool skip_special = true) const {
    return runtime_->tokenizer->decode(std::span<const int32_t>(ids).first(size_t(n)),
                                       skip_special);
  }

  std::shared_ptr<ModelRuntime> runtime_;
  std::unique_ptr<InferenceSession> session_;
  testing::RecordingHooks hooks_;
};

TEST_F(DeliveredTokensTest, SettledTokensAreExactlyTheTextSentSoFar) {
  // A stop string's prefix ("ST") is held until the next byte decides, and "é" arrives as two
  // byte tokens of which the first alone is no character.
  start("one ST two é three STOP four");
  auto job = completion({"STOP"});
  Received got = run(*job);
  ASSERT_FALSE(got.settled.empty());
  for (size_t i = 0; i < got.settled.size(); ++i) {
    EXPECT_EQ(decode_first(got.generated, got.settled[i]), got.text_at[i]) << "event " << i;
    if (i > 0) {
      EXPECT_GE(got.settled[i], got.settled[i - 1]);
    }
  }
  EXPECT_EQ(got.text, "one ST two é three ");
}

TEST_F(DeliveredTokensTest, AnOpenToolCallBlockIsNotSettled) {
  start(
      "Reading it.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n"
      "</tool_call>");
  auto job = chat_with_tools();
  Received got = run(*job);
  const std::string raw = decode_first(got.generated, int64_t(got.generated.size()), false);
  const int64_t block = int64_t(raw.find("<tool_call>"));  // one byte per token before it
  ASSERT_GT(block, 0);
  ASSERT_GE(got.settled.size(), 2u);
  // Until the block closes, nothing from the whitespace before `<tool_call>` on is settled.
  for (size_t i = 0; i < got.settled.size(); ++i) {
    if (got.text_at[i].find("[read_file]") == std::string::npos) {
      EXPECT_LE(got.settled[i], block - 1) << "event " << i << ": " << got.text_at[i];
    } else {
      EXPECT_GT(got.settled[i], block) << "event " << i << ": " << got.text_at[i];
    }
  }
  EXPECT_EQ(got.text, "Reading it.[read_file]");
}

TEST_F(DeliveredTokensTest, InterruptedHoldsWhatTheClientReceivedNotWhatWasGenerated) {
  start(std::string(300, 'z'), /*decode_delay_ms=*/2);
  auto job = completion();
  int64_t delivered = 0;
  run(*job, [&](const Received& got) {
    if (got.settled.size() <= 10) {
      job->mark_delivered(got.settled.back());  // the writer sent it
      delivered = got.settled.back();
      return;
    }
    // The client is gone: nothing more reaches it while the engine keeps generating a while.
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
    job->cancel();
  });
  std::lock_guard<std::mutex> lock(hooks_.mutex);
  ASSERT_EQ(hooks_.interrupted.size(), 1u);
  const int64_t prompt = int64_t(job->prompt().ids.size());
  EXPECT_EQ(int64_t(hooks_.interrupted[0].size()), prompt + delivered);
  EXPECT_GE(delivered, 10);
  EXPECT_GT(hooks_.interrupted_session_positions[0], prompt + delivered + 5)
      << "generation did not run ahead of the client";
}

}  // namespace
}  // namespace qmlx::server
