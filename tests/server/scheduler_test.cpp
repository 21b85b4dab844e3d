// The engine thread's idle work (scheduler.cpp): after each request the cache's on_idle runs
// once, also when the next request is already waiting (a fast client), and its preemption
// check lets it go on only with work that the waiting request's prompt begins with.
#include "server/scheduling/scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tests/server/fake_runtime.h"

namespace qmlx::server {
namespace {

using ordered_json = nlohmann::ordered_json;

// Idle work that would produce `history`: records what the preemption check answers for it,
// for nothing, and for another conversation's tokens, and the order of lookups and idle calls.
class IdleProbeHooks : public CacheHooks {
 public:
  CacheLookupResult lookup_and_restore(const PromptView& prompt, InferenceSession&) override {
    std::lock_guard<std::mutex> lock(mutex);
    events.push_back("lookup " + std::to_string(prompt.ids.size()));
    return {};
  }
  void on_generation_end(std::span<const int32_t>, const StateSource&, CanonicalHistory) override {
    if (after_reply) after_reply();
  }
  void on_idle(InferenceSession&, const IdlePreemption& preempted) override {
    const std::vector<int32_t> other = {'x', 'y', 'z'};
    std::lock_guard<std::mutex> lock(mutex);
    events.push_back(std::string("idle needed=") + (preempted(history) ? "yield" : "go") +
                     " nothing=" + (preempted({}) ? "yield" : "go") +
                     " other=" + (preempted(other) ? "yield" : "go"));
    idled.notify_all();
  }
  // The idle work after the reply runs once the reply was published: wait for it.
  bool wait_idle_calls(size_t n) {
    std::unique_lock<std::mutex> lock(mutex);
    return idled.wait_for(lock, std::chrono::seconds(10), [&] {
      return std::count_if(events.begin(), events.end(),
                           [](const std::string& e) { return e.starts_with("idle"); }) >= long(n);
    });
  }

  std::vector<int32_t> history;
  std::function<void()> after_reply;  // runs on the engine thread as the reply ends
  std::mutex mutex;
  std::condition_variable idled;
  std::vector<std::string> events;
};

class SchedulerIdleTest : public ::testing::Test {
 protected:
  std::shared_ptr<GenerationJob> job(uint64_t uid, const std::string& text) {
    GenerationRequest request;
    request.max_tokens = 4;
    request.sampling.temperature = 0;
    request.messages = ordered_json::array({{{"role", "user"}, {"content", text}}});
    RenderedPrompt prompt = runtime_->render_chat(request.messages, ordered_json::array(), true,
                                                  ordered_json::object());
    return std::make_shared<GenerationJob>(uid, std::move(request), std::move(prompt));
  }
  static void wait_done(GenerationJob& job) {
    for (;;) {
      auto event = job.next(std::chrono::seconds(10));
      ASSERT_TRUE(event) << "no event within 10 s";
      if (event->kind == GenerationEvent::Kind::kDone) return;
      ASSERT_NE(event->kind, GenerationEvent::Kind::kError) << event->message;
    }
  }

  std::shared_ptr<ModelRuntime> runtime_ = testing::make_fake_runtime({.script = "ok"});
  IdleProbeHooks hooks_;
};

TEST_F(SchedulerIdleTest, IdleWorkRunsBeforeAWaitingRequestOnlyWithWhatThatRequestNeeds) {
  auto first = job(1, "run the tests");
  auto next = job(2, "run the tests, then fix what fails");
  // The idle work produces the first 12 tokens of the next prompt (the history it shares).
  hooks_.history.assign(next->prompt().ids.begin(), next->prompt().ids.begin() + 12);
  Scheduler scheduler(*runtime_, hooks_, nullptr, 4);
  // A client that sends its next request before the engine thread finished the reply.
  bool sent = false;
  hooks_.after_reply = [&] {
    if (sent) return;
    sent = true;
    scheduler.submit(next);
  };
  scheduler.submit(first);
  wait_done(*first);
  wait_done(*next);
  ASSERT_TRUE(hooks_.wait_idle_calls(2));
  scheduler.stop(std::chrono::milliseconds(1000));
  const std::string first_len = std::to_string(first->prompt().ids.size());
  const std::string next_len = std::to_string(next->prompt().ids.size());
  EXPECT_EQ(hooks_.events, (std::vector<std::string>{
                               "lookup " + first_len, "idle needed=go nothing=yield other=yield",
                               "lookup " + next_len, "idle needed=go nothing=go other=go"}));
}

TEST_F(SchedulerIdleTest, NothingWaitingMeansIdleWorkNeverYields) {
  auto only = job(1, "hello");
  hooks_.history = only->prompt().ids;
  Scheduler scheduler(*runtime_, hooks_, nullptr, 4);
  scheduler.submit(only);
  wait_done(*only);
  ASSERT_TRUE(hooks_.wait_idle_calls(1));
  scheduler.stop(std::chrono::milliseconds(1000));
  ASSERT_EQ(hooks_.events.size(), 2u);
  EXPECT_EQ(hooks_.events[1], "idle needed=go nothing=go other=go");
}

}  // namespace
}  // namespace qmlx::server
