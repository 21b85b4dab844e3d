// The scheduler's slots (--parallel N, scheduler.cpp): N jobs run at once and all complete; a
// cancelled job frees its slot at once; admission by memory makes a job wait for room, or
// refuses it (503) when it cannot fit even alone; the running / waiting gauges and the engine
// step histograms reach the metrics.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/common/api_error.h"
#include "server/scheduling/scheduler.h"
#include "tests/server/fake_runtime.h"

namespace qmlx::server {
namespace {

using ordered_json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

// Waits up to 10 s for `condition`.
template <typename F>
bool eventually(F condition) {
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (!condition()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

// Records the session each request's lookup ran on (which slot took it).
class LookupRecordingHooks : public CacheHooks {
 public:
  CacheLookupResult lookup_and_restore(const PromptView&, InferenceSession& session) override {
    std::lock_guard<std::mutex> lock(mutex);
    lookups.push_back(&session);
    return {};
  }
  std::mutex mutex;
  std::vector<InferenceSession*> lookups;
};

// Idle work (after the first request only) that produces `history` until released or
// pre-empted.
class SlowIdleHooks : public LookupRecordingHooks {
 public:
  void on_idle(InferenceSession& session, const IdlePreemption& preempted) override {
    if (idle_calls++ > 0) return;
    idle_session = &session;
    while (!released && !preempted(history)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  std::vector<int32_t> history;
  std::atomic<int> idle_calls{0};
  std::atomic<InferenceSession*> idle_session{nullptr};
  std::atomic<bool> released{false};
};

class ParallelSchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    runtime_ = testing::make_fake_runtime({.script = "one two three", .decode_delay_ms = 20});
  }

  std::shared_ptr<GenerationJob> job(uint64_t uid, const std::string& text, int max_tokens) {
    GenerationRequest request;
    request.route = Route::kCompletions;
    request.max_tokens = max_tokens;
    request.sampling.temperature = 0;
    RenderedPrompt prompt;
    prompt.ids = runtime_->tokenizer->encode(text, false);
    request.prompt_ids = prompt.ids;
    return std::make_shared<GenerationJob>(uid, std::move(request), std::move(prompt));
  }

  // The job's text and finish; fails the test on an error or a silence of 10 s.
  static std::pair<std::string, FinishReason> reply(GenerationJob& job) {
    std::string text;
    for (;;) {
      auto event = job.next(std::chrono::seconds(10));
      if (!event) {
        ADD_FAILURE() << "no event within 10 s";
        return {text, FinishReason::kCancelled};
      }
      if (event->kind == GenerationEvent::Kind::kOutput) text += event->delta.content;
      if (event->kind == GenerationEvent::Kind::kError) {
        ADD_FAILURE() << event->message;
        return {text, FinishReason::kCancelled};
      }
      if (event->kind == GenerationEvent::Kind::kDone) return {text, event->finish};
    }
  }

  // A state layout of 32 KiB per token (16 attention layers, 8 heads of 32 f32 values).
  void give_state_layout() {
    StateLayout& l = runtime_->state_layout;
    l.num_layers = 16;
    for (int i = 0; i < 16; ++i) l.attention_layers.push_back(i);
    l.kv_heads = 8;
    l.head_dim = 32;
    l.kv_dtype = DType::kF32;
  }

  std::shared_ptr<ModelRuntime> runtime_;
  CacheHooks no_cache_;
};

TEST_F(ParallelSchedulerTest, NJobsRunAtOnceAndAllComplete) {
  Scheduler scheduler(*runtime_, no_cache_, nullptr, 8, {}, {.parallel = 4});
  std::vector<std::shared_ptr<GenerationJob>> jobs;
  for (int i = 0; i < 4; ++i) jobs.push_back(job(i + 1, "prompt " + std::to_string(i), 50));
  for (auto& j : jobs) scheduler.submit(j);
  // 14 decode steps of 20 ms each: the four overlap, they do not queue.
  EXPECT_TRUE(eventually([&] { return scheduler.running() == 4; }));
  EXPECT_EQ(scheduler.queued(), 0u);
  for (auto& j : jobs) {
    auto [text, finish] = reply(*j);
    EXPECT_EQ(text, "one two three");
    EXPECT_EQ(finish, FinishReason::kStop);
  }
  EXPECT_TRUE(eventually([&] { return scheduler.running() == 0; }));
  scheduler.stop(std::chrono::milliseconds(1000));
}

TEST_F(ParallelSchedulerTest, FreeSlotsTakeJobsEvenWithNoQueue) {
  Scheduler scheduler(*runtime_, no_cache_, nullptr, /*max_queue=*/0, {}, {.parallel = 3});
  std::vector<std::shared_ptr<GenerationJob>> jobs;
  for (int i = 0; i < 3; ++i) {
    jobs.push_back(job(i + 1, "prompt " + std::to_string(i), 50));
    scheduler.submit(jobs.back());
  }
  ASSERT_TRUE(eventually([&] { return scheduler.running() == 3; }));
  try {
    scheduler.submit(job(4, "one too many", 50));
    ADD_FAILURE() << "a fourth job was queued with no queue and every slot busy";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 429);
  }
  for (auto& j : jobs) EXPECT_EQ(reply(*j).first, "one two three");
  scheduler.stop(std::chrono::milliseconds(1000));
}

// A fast client's next turn arrives while one slot's idle work pre-fills its history: it waits
// for that slot (whose session then holds the history) though another slot is free.
TEST_F(ParallelSchedulerTest, AJobWaitsForTheSlotWhoseIdleWorkProducesItsPrompt) {
  SlowIdleHooks hooks;
  Scheduler scheduler(*runtime_, hooks, nullptr, 8, {}, {.parallel = 2});
  auto first = job(1, "turn one", 5), next = job(2, "turn one, reply, next turn", 50);
  hooks.history.assign(next->prompt().ids.begin(), next->prompt().ids.begin() + 8);
  scheduler.submit(first);
  reply(*first);
  ASSERT_TRUE(eventually([&] { return hooks.idle_session.load() != nullptr; }));
  scheduler.submit(next);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(scheduler.running(), 0u);  // the free slot did not take it
  EXPECT_EQ(scheduler.queued(), 1u);
  hooks.released = true;
  EXPECT_EQ(reply(*next).first, "one two three");
  std::lock_guard<std::mutex> lock(hooks.mutex);
  ASSERT_EQ(hooks.lookups.size(), 2u);
  EXPECT_EQ(hooks.lookups[1], hooks.idle_session.load());  // the slot that pre-filled it
  scheduler.stop(std::chrono::milliseconds(1000));
}

// Idle work that takes a while and never asks whether a request waits (a hook with nothing to
// pre-fill still runs between a job's last event and the slot's next job).
class SlowQuietIdleHooks : public LookupRecordingHooks {
 public:
  void on_idle(InferenceSession&, const IdlePreemption&) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
};

// A fast client sends its next turn the moment the reply arrives, before the slot that answered
// is back for more: the turn waits for that slot (its session holds the conversation) though
// another is free. A turn sent while that slot still generates, or another conversation, does
// not wait.
TEST_F(ParallelSchedulerTest, TheNextTurnGoesToTheSlotThatAnsweredTheLastOne) {
  SlowQuietIdleHooks hooks;
  Scheduler scheduler(*runtime_, hooks, nullptr, 8, {}, {.parallel = 2});
  auto first = job(1, "turn one", 5);
  auto next_turn = [&](uint64_t uid, const std::shared_ptr<GenerationJob>& before) {
    GenerationRequest request = before->request();
    RenderedPrompt prompt = before->prompt();
    for (int32_t id : runtime_->tokenizer->encode(" the reply and the next turn", false))
      prompt.ids.push_back(id);
    request.prompt_ids = prompt.ids;
    request.max_tokens = 50;
    return std::make_shared<GenerationJob>(uid, std::move(request), std::move(prompt));
  };
  scheduler.submit(first);
  reply(*first);
  auto second = next_turn(2, first);
  scheduler.submit(second);  // the first's slot is still in its 300 ms of idle work
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(scheduler.running(), 0u);  // the free slot did not take it
  EXPECT_EQ(reply(*second).first, "one two three");
  {
    std::lock_guard<std::mutex> lock(hooks.mutex);
    ASSERT_EQ(hooks.lookups.size(), 2u);
    EXPECT_EQ(hooks.lookups[1], hooks.lookups[0]);  // the same slot's session
  }
  // Sent while the one it extends still generates (a side request on the same history): taken
  // at once by the free slot.
  runtime_->stop_token_ids.clear();  // the third never stops by itself
  auto third = job(3, "turn two", 1000);
  auto fourth = next_turn(4, third);
  scheduler.submit(third);
  ASSERT_TRUE(eventually([&] { return scheduler.running() == 1; }));
  scheduler.submit(fourth);
  EXPECT_TRUE(eventually([&] { return scheduler.running() == 2; }));
  third->cancel();
  reply(*third);
  reply(*fourth);
  scheduler.stop(std::chrono::milliseconds(1000));
}

TEST_F(ParallelSchedulerTest, ACancelledJobFreesItsSlotAtOnce) {
  auto slow = testing::make_fake_runtime({.script = "x", .decode_delay_ms = 50});
  runtime_ = slow;
  Scheduler scheduler(*runtime_, no_cache_, nullptr, 8, {}, {.parallel = 2});
  // "x" then <|im_end|> would end it: the script restarts only when the history does not end
  // with it, so a long max_tokens reply keeps two slots busy for seconds.
  auto a = job(1, "first", 1000), b = job(2, "second", 1000), c = job(3, "third", 3);
  runtime_->stop_token_ids.clear();  // never stops by itself
  scheduler.submit(a);
  scheduler.submit(b);
  scheduler.submit(c);
  ASSERT_TRUE(eventually([&] { return scheduler.running() == 2; }));
  EXPECT_EQ(scheduler.queued(), 1u);
  const auto cancelled_at = Clock::now();
  a->cancel();
  auto [text, finish] = reply(*c);
  // The third job needed a slot: it got a's at once (a few 50 ms steps), not after b's 50 s.
  EXPECT_LT(Clock::now() - cancelled_at, std::chrono::seconds(2));
  EXPECT_EQ(finish, FinishReason::kLength);
  EXPECT_EQ(reply(*a).second, FinishReason::kCancelled);
  b->cancel();
  scheduler.stop(std::chrono::milliseconds(1000));
}

TEST_F(ParallelSchedulerTest, AdmissionByMemoryWaitsForRoomOrRefusesWhatCannotFitAlone) {
  give_state_layout();
  const uint64_t per_token = runtime_->state_layout.kv_bytes_per_token();
  ASSERT_EQ(per_token, 32u * 1024);
  auto a = job(1, "first request", 40), b = job(2, "second request", 40);
  const uint64_t need = sequence_state_bytes(runtime_->state_layout, 13 + 40);
  // Room for one of them at a time, though two slots are free.
  Scheduler scheduler(*runtime_, no_cache_, nullptr, 8, {},
                      {.parallel = 2, .memory_budget_bytes = need + need / 2});
  auto too_big = job(3, "x", 100);
  try {
    scheduler.submit(too_big);
    ADD_FAILURE() << "a job larger than the whole budget was accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 503);
    EXPECT_NE(std::string(e.what()).find("--max-batch-memory"), std::string::npos) << e.what();
  }
  scheduler.submit(a);
  scheduler.submit(b);
  ASSERT_TRUE(eventually([&] { return scheduler.running() == 1; }));
  EXPECT_EQ(scheduler.queued(), 1u);  // b waits for memory, not for a slot
  EXPECT_EQ(reply(*a).first, "one two three");
  EXPECT_EQ(reply(*b).first, "one two three");
  scheduler.stop(std::chrono::milliseconds(1000));
}

TEST_F(ParallelSchedulerTest, GaugesAndStepHistogramsReachTheMetrics) {
  // The fake runtime has no engine: stand in for its step loop by calling the listener.
  StepListener listener;
  runtime_->listen_steps = [&](StepListener l) { listener = std::move(l); };
  MetricsRegistry registry;
  ServerMetrics metrics(registry);
  Scheduler scheduler(*runtime_, no_cache_, &metrics, 8, {}, {.parallel = 1});
  ASSERT_TRUE(listener);
  listener(3, 40, 0.02);
  auto a = job(1, "first", 50), b = job(2, "second", 50);
  scheduler.submit(a);
  scheduler.submit(b);
  ASSERT_TRUE(eventually([&] { return scheduler.running() == 1 && scheduler.queued() == 1; }));
  const std::string during = registry.expose();
  EXPECT_NE(during.find("qmlx_sequences_running 1"), std::string::npos) << during;
  EXPECT_NE(during.find("qmlx_sequences_waiting 1"), std::string::npos) << during;
  EXPECT_NE(during.find("qmlx_batch_sequences_count 1"), std::string::npos) << during;
  EXPECT_NE(during.find("qmlx_batch_sequences_sum 3"), std::string::npos) << during;
  EXPECT_NE(during.find("qmlx_step_seconds_count 1"), std::string::npos) << during;
  reply(*a);
  reply(*b);
  ASSERT_TRUE(eventually([&] { return scheduler.running() == 0; }));
  const std::string after = registry.expose();
  EXPECT_NE(after.find("qmlx_sequences_running 0"), std::string::npos) << after;
  EXPECT_NE(after.find("qmlx_sequences_waiting 0"), std::string::npos) << after;
  scheduler.stop(std::chrono::milliseconds(1000));
  EXPECT_FALSE(listener);  // the scheduler stopped listening
}

}  // namespace
}  // namespace qmlx::server
