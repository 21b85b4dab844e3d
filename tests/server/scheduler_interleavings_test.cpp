// The scheduler never leaves a job waiting for ever (scheduler.cpp): seeded random traffic of
// several clients against the real scheduler with several slots (conversations that share
// prefixes, fast follow-ups, retries of the same turn on two slots, sub-agent branches,
// cancellations while queued or running, idle pre-fills that produce what the next turn needs,
// a memory budget that holds jobs back) must end every job within a bound. The hooks stand in
// for the cache: their idle work "pre-fills" the conversation's canonical history the way
// PrefixCacheHooks does (asking the pre-emption check before every step), so the admission rules
// (idle pre-fill ownership, the answering slot's affinity, memory, first come first served) meet
// in every order the threads happen to take. A watchdog test checks the log line and /health's
// view of a job held past its bound.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "server/common/api_error.h"
#include "server/scheduling/scheduler.h"
#include "tests/server/fake_runtime.h"

namespace qmlx::server {
namespace {

using Clock = std::chrono::steady_clock;
using Tokens = std::vector<int32_t>;

// What the model "replies" to a prompt and how the next turn renders it: deterministic, so two
// slots that answered the same prompt pre-fill the same history (a retried request does that).
Tokens canonical_history(const Tokens& prompt) {
  Tokens history = prompt;
  uint32_t h = 2166136261u;
  for (int32_t id : prompt) h = (h ^ uint32_t(id)) * 16777619u;
  for (int i = 0; i < 3; ++i) history.push_back(int32_t('a' + (h >> (i * 5)) % 26));
  return history;
}

// A thread-safe seeded source of small decisions for the hooks.
class SeededDice {
 public:
  explicit SeededDice(uint64_t seed) : rng_(seed) {}
  int below(int n) {
    std::lock_guard<std::mutex> lock(mutex_);
    return int(rng_() % uint64_t(n));
  }

 private:
  std::mutex mutex_;
  std::mt19937_64 rng_;
};

// The cache as the scheduler meets it: a lookup that may take a moment (a restore, a wait for a
// shared prefix), and idle work that pre-fills the last prompt's canonical history in steps,
// asking before each whether to give way, for a random number of steps; sometimes idle work
// with nothing to produce, sometimes a failing one.
class InterleavingHooks : public CacheHooks {
 public:
  explicit InterleavingHooks(uint64_t seed) : dice_(seed) {}

  CacheLookupResult lookup_and_restore(const PromptView& prompt,
                                       InferenceSession& session) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      last_prompt_[&session].assign(prompt.ids.begin(), prompt.ids.end());
    }
    std::this_thread::sleep_for(std::chrono::microseconds(dice_.below(2000)));
    return {};
  }

  void on_idle(InferenceSession& session, const IdlePreemption& preempted) override {
    Tokens history;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      history = canonical_history(last_prompt_[&session]);
    }
    const int kind = dice_.below(10);
    if (kind == 0) return;                                        // nothing to do
    if (kind == 1) throw std::runtime_error("idle work failed");  // a broken hook
    if (kind == 2) {
      preempted({});  // work no request needs: gives way to any
      std::this_thread::sleep_for(std::chrono::milliseconds(dice_.below(5)));
      return;
    }
    const int steps = dice_.below(40);
    for (int step = 0; step < steps; ++step) {
      if (preempted(history)) return;
      std::this_thread::sleep_for(std::chrono::microseconds(500 + dice_.below(2500)));
    }
  }

 private:
  SeededDice dice_;
  std::mutex mutex_;
  std::map<InferenceSession*, Tokens> last_prompt_;
};

struct Scenario {
  uint64_t seed = 0;
  int slots = 2;
  int clients = 3;
  int requests_per_client = 25;
  bool memory_budget = false;
};

std::string describe(const Scenario& s) {
  return "seed=" + std::to_string(s.seed) + " slots=" + std::to_string(s.slots) +
         " clients=" + std::to_string(s.clients) + (s.memory_budget ? " with a memory budget" : "");
}

// Every job ends (done or error) within this bound; a wedged scheduler never ends it.
constexpr auto kJobBound = std::chrono::seconds(20);

class SchedulerInterleavingsTest : public ::testing::TestWithParam<uint64_t> {
 protected:
  // Runs the scenario; returns the failures (empty when every job ended in time).
  std::vector<std::string> run(const Scenario& scenario) {
    auto runtime = testing::make_fake_runtime({.script = "ok", .decode_delay_ms = 1});
    runtime->stop_token_ids.clear();  // replies run to max_tokens: a few steps each
    SchedulerLimits limits{.parallel = scenario.slots,
                           .affinity_wait = std::chrono::milliseconds(30),
                           .watchdog_after = std::chrono::seconds(10)};
    if (scenario.memory_budget) {
      StateLayout& l = runtime->state_layout;
      l.num_layers = 1;
      l.attention_layers = {0};
      l.kv_heads = 1;
      l.head_dim = 256;
      l.kv_dtype = DType::kF32;  // 2 KiB a token (K and V): prompts are 16-210 tokens
      limits.memory_budget_bytes = 1000 * 1024;
    }
    InterleavingHooks hooks(scenario.seed * 7919 + 1);
    Scheduler scheduler(*runtime, hooks, nullptr, /*max_queue=*/64, {}, limits);

    std::mutex failures_mutex;
    std::vector<std::string> failures;
    std::atomic<uint64_t> next_uid{1};
    // The conversations the clients share: each the latest prompt of its main thread.
    const int kConversations = 3;
    std::mutex conversations_mutex;
    std::vector<Tokens> conversations(kConversations);
    for (int c = 0; c < kConversations; ++c) {
      for (int i = 0; i < 16; ++i)
        conversations[size_t(c)].push_back(int32_t('A' + (c * 7 + i) % 26));
    }

    auto client = [&](int index) {
      std::mt19937_64 rng(scenario.seed * 1000003 + uint64_t(index));
      auto below = [&](int n) { return int(rng() % uint64_t(n)); };
      for (int r = 0; r < scenario.requests_per_client; ++r) {
        const int c = below(kConversations);
        Tokens prompt;
        bool main_thread = false;
        {
          std::lock_guard<std::mutex> lock(conversations_mutex);
          const Tokens& latest = conversations[size_t(c)];
          switch (below(4)) {
            case 0:  // a retry of the latest turn (or a second client on the same one)
              prompt = latest;
              break;
            case 1:  // a sub-agent branching off the conversation's beginning
              prompt.assign(latest.begin(), latest.begin() + ptrdiff_t(latest.size() / 2));
              for (int i = 0; i < 4; ++i) prompt.push_back(int32_t('0' + below(10)));
              break;
            default:  // the next turn: the history as rendered again, then a new message
              prompt = canonical_history(latest);
              for (int i = 0; i < 2 + below(4); ++i) prompt.push_back(int32_t('a' + below(26)));
              main_thread = prompt.size() < 200;
              break;
          }
        }
        GenerationRequest request;
        request.route = Route::kCompletions;
        request.max_tokens = 1 + below(4);
        request.sampling.temperature = 0;
        request.prompt_ids = prompt;
        RenderedPrompt rendered;
        rendered.ids = prompt;
        // The reply's turn opens after the last message, as a chat template renders it.
        rendered.last_message_end = below(2) ? int64_t(prompt.size()) : -1;
        auto job =
            std::make_shared<GenerationJob>(next_uid++, std::move(request), std::move(rendered));
        try {
          scheduler.submit(job);
        } catch (const ApiError& e) {
          if (e.status() != 429) {
            std::lock_guard<std::mutex> lock(failures_mutex);
            failures.push_back("uid=" + std::to_string(job->uid()) + ": " + e.what());
          }
          continue;
        }
        const bool cancels = below(10) == 0;
        const auto cancel_at = Clock::now() + std::chrono::microseconds(below(20000));
        const auto deadline = Clock::now() + kJobBound;
        bool ended = false;
        while (!ended && Clock::now() < deadline) {
          if (cancels && Clock::now() >= cancel_at) job->cancel();
          auto event = job->next(std::chrono::milliseconds(cancels && !job->cancelled() ? 1 : 50));
          if (!event) continue;
          ended = event->kind == GenerationEvent::Kind::kDone ||
                  event->kind == GenerationEvent::Kind::kError;
          if (event->kind == GenerationEvent::Kind::kError) {
            std::lock_guard<std::mutex> lock(failures_mutex);
            failures.push_back("uid=" + std::to_string(job->uid()) + ": " + event->message);
          }
        }
        if (!ended) {
          std::lock_guard<std::mutex> lock(failures_mutex);
          failures.push_back("uid=" + std::to_string(job->uid()) + " did not end within " +
                             std::to_string(kJobBound.count()) + " s (" +
                             std::to_string(scheduler.queued()) + " queued, " +
                             std::to_string(scheduler.running()) + " running)");
          return;  // this client is stuck; the others go on
        }
        if (main_thread && !cancels) {
          std::lock_guard<std::mutex> lock(conversations_mutex);
          if (conversations[size_t(c)].size() < prompt.size()) conversations[size_t(c)] = prompt;
        }
        // A fast tool loop sends the next turn at once; a person a moment later.
        if (below(2)) std::this_thread::sleep_for(std::chrono::microseconds(below(3000)));
      }
    };
    std::vector<std::thread> threads;
    for (int i = 0; i < scenario.clients; ++i) threads.emplace_back(client, i);
    for (std::thread& t : threads) t.join();
    const QueueStatus status = scheduler.status();
    if (status.stalled) failures.push_back("the watchdog reported a stalled queue");
    scheduler.stop(std::chrono::milliseconds(2000));
    return failures;
  }
};

TEST_P(SchedulerInterleavingsTest, EveryJobEndsWithinItsBound) {
  const uint64_t seed = GetParam();
  std::mt19937_64 rng(seed);
  Scenario scenario;
  scenario.seed = seed;
  scenario.slots = 2 + int(rng() % 3);    // 2 to 4 slots
  scenario.clients = 2 + int(rng() % 5);  // 2 to 6 clients
  scenario.memory_budget = rng() % 3 == 0;
  const std::vector<std::string> failures = run(scenario);
  std::string all;
  for (const std::string& f : failures) all += "\n  " + f;
  EXPECT_TRUE(failures.empty()) << describe(scenario) << ":" << all;
}

INSTANTIATE_TEST_SUITE_P(Seeds, SchedulerInterleavingsTest, ::testing::Range<uint64_t>(1, 17));

// A job held back by a rule while a slot is free is logged once, after the watchdog bound,
// with the rule; /health's view of the queue shows how long it has waited and that it stalled.
TEST(SchedulerWatchdogTest, AJobHeldPastTheBoundIsLoggedOnceWithItsRule) {
  auto runtime = testing::make_fake_runtime({.script = "x", .decode_delay_ms = 20});
  runtime->stop_token_ids.clear();
  StateLayout& l = runtime->state_layout;
  l.num_layers = 1;
  l.attention_layers = {0};
  l.kv_heads = 1;
  l.head_dim = 256;
  l.kv_dtype = DType::kF32;
  CacheHooks no_cache;
  auto job = [&](uint64_t uid, int max_tokens) {
    GenerationRequest request;
    request.route = Route::kCompletions;
    request.max_tokens = max_tokens;
    RenderedPrompt prompt;
    prompt.ids = Tokens(100, 'q');
    request.prompt_ids = prompt.ids;
    return std::make_shared<GenerationJob>(uid, std::move(request), std::move(prompt));
  };
  // 2 KiB a token: the first needs 2,200 KiB, the second 220; room for one at a time, so the
  // second waits for memory though the second slot is free.
  Scheduler scheduler(*runtime, no_cache, nullptr, 8, {},
                      {.parallel = 2,
                       .memory_budget_bytes = 2300 * 1024,
                       .watchdog_after = std::chrono::milliseconds(300)});
  auto first = job(1, 1000), second = job(2, 10);
  ::testing::internal::CaptureStderr();
  scheduler.submit(first);
  scheduler.submit(second);
  std::this_thread::sleep_for(std::chrono::milliseconds(900));
  const QueueStatus held = scheduler.status();
  first->cancel();
  scheduler.stop(std::chrono::milliseconds(2000));
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(held.running, 1u);
  EXPECT_EQ(held.waiting, 1u);
  EXPECT_GE(held.oldest_wait_ms, 800);
  EXPECT_TRUE(held.stalled);
  const size_t at = log.find("scheduler: uid=2 has waited");
  ASSERT_NE(at, std::string::npos) << log;
  EXPECT_NE(log.find("memory budget: needs 1 MiB", at), std::string::npos) << log;
  EXPECT_EQ(log.find("scheduler: uid=2 has waited", at + 1), std::string::npos)
      << "logged more than once:\n"
      << log;
}

}  // namespace
}  // namespace qmlx::server
