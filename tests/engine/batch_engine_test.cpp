// BatchEngine (engine/batch_engine.h): sequences on their own threads share one step loop; each
// gets the tokens and logits it gets alone, however its prompt is chunked and whatever shares
// its steps; a short prefill is not starved by a long one; a cancelled prefill leaves at a step
// boundary while the others go on.
#include "engine/batch_engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <mutex>
#include <random>
#include <thread>

#include "base/error.h"
#include "tiny_model.h"

namespace qmlx {
namespace {

// What one request produced: its greedy tokens and the logits after the last one fed.
struct Reply {
  std::vector<int32_t> tokens;
  std::vector<float> logits;
};

std::vector<int32_t> random_tokens(size_t n, std::mt19937_64& rng) {
  std::vector<int32_t> t(n);
  for (auto& x : t) x = int32_t(rng() % 128);
  return t;
}

int32_t greedy(std::span<const float> logits) {
  return int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

// Prefills `prompt` in the given pieces, then decodes `n` greedy tokens.
Reply run_request(Session& session, std::span<const int32_t> prompt,
                  const std::vector<size_t>& pieces, int n) {
  size_t done = 0;
  for (size_t piece : pieces) {
    session.prefill(prompt.subspan(done, piece));
    done += piece;
  }
  Reply reply;
  for (int i = 0; i < n; ++i) {
    reply.tokens.push_back(greedy(session.logits()));
    session.decode(reply.tokens.back());
  }
  reply.logits.assign(session.logits().begin(), session.logits().end());
  return reply;
}

// Random cut points of [0, n): pieces of 1..n tokens.
std::vector<size_t> random_pieces(size_t n, std::mt19937_64& rng) {
  std::vector<size_t> pieces;
  for (size_t left = n; left > 0;) {
    size_t piece = std::min<size_t>(left, 1 + rng() % 60);
    pieces.push_back(piece);
    left -= piece;
  }
  return pieces;
}

class BatchEngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = testing::make_temp_dir("batch_engine");
    testing::TinyModelSpec spec{"qwen3_5", "mlx"};
    spec.bits = 8;
    testing::write_tiny_model(dir_ + "/model", spec);
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }

  SessionOptions options(std::shared_ptr<BatchEngine> engine = nullptr) const {
    SessionOptions o;
    o.kv_dtype = DType::kF32;
    o.prefill_chunk = kStepTokens;
    o.engine = std::move(engine);
    return o;
  }

  static constexpr int kStepTokens = 24;
  static std::string dir_;
  std::shared_ptr<const Model> model_ = Model::load(dir_ + "/model");
};
std::string BatchEngineTest::dir_;

TEST_F(BatchEngineTest, OneSequenceIsExactlyTheSessionAlone) {
  std::mt19937_64 rng(1);
  auto engine = std::make_shared<BatchEngine>(model_, BatchEngineOptions{kStepTokens});
  const auto prompt = random_tokens(100, rng);
  const std::vector<size_t> pieces = {30, 1, 69};
  Session alone(model_, options()), batched(model_, options(engine));
  Reply a = run_request(alone, prompt, pieces, 8);
  Reply b = run_request(batched, prompt, pieces, 8);
  EXPECT_EQ(b.tokens, a.tokens);
  EXPECT_EQ(b.logits, a.logits);
  EXPECT_EQ(batched.position(), alone.position());
}

// 2 to 8 sequences at once, each prompt cut at random points, against each request alone and
// whole. The step loop cuts the prompts again (the shared budget) and mixes decode rows in.
TEST_F(BatchEngineTest, ConcurrentSequencesGetWhatTheyGetAlone) {
  auto engine = std::make_shared<BatchEngine>(model_, BatchEngineOptions{kStepTokens});
  std::vector<BatchStepStats> steps;
  std::mutex steps_mutex;
  engine->set_step_observer([&](const BatchStepStats& s) {
    std::lock_guard<std::mutex> lock(steps_mutex);
    steps.push_back(s);
  });
  std::mt19937_64 rng(2);
  for (int threads : {2, 3, 5, 8}) {
    std::vector<std::vector<int32_t>> prompts;
    std::vector<std::vector<size_t>> pieces;
    std::vector<int> decodes;
    std::vector<Reply> alone;
    for (int t = 0; t < threads; ++t) {
      prompts.push_back(random_tokens(5 + rng() % 150, rng));
      pieces.push_back(random_pieces(prompts.back().size(), rng));
      decodes.push_back(1 + int(rng() % 12));
      Session session(model_, options());
      alone.push_back(run_request(session, prompts[t], {prompts[t].size()}, decodes[t]));
    }
    std::vector<Reply> together(threads);
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        Session session(model_, options(engine));
        together[t] = run_request(session, prompts[t], pieces[t], decodes[t]);
      });
    }
    for (auto& w : workers) w.join();
    for (int t = 0; t < threads; ++t) {
      SCOPED_TRACE("threads=" + std::to_string(threads) + " sequence " + std::to_string(t));
      EXPECT_EQ(together[t].tokens, alone[t].tokens);
      // Each row kind has one arithmetic whatever the rows around it (kernels/matmul.h): bitwise.
      EXPECT_EQ(together[t].logits, alone[t].logits);
    }
  }
  std::lock_guard<std::mutex> lock(steps_mutex);
  ASSERT_FALSE(steps.empty());
  int widest = 0;
  for (const BatchStepStats& s : steps) {
    EXPECT_LE(s.prompt_rows, kStepTokens);  // the budget holds however many prefill
    widest = std::max(widest, s.sequences);
  }
  EXPECT_GT(widest, 1);  // some steps did batch several sequences
}

// Decoders that take a moment between tokens (sampling, the stream: here 1 ms) come back at
// different times; a step still waits for the others rather than running the first alone,
// so four sequences decode in steps of four, not in fragments (a batch of 4 used to run as
// steps of 1 and 3, every sequence paying two steps per token).
TEST_F(BatchEngineTest, DecodersThatComeBackAMomentApartShareTheirSteps) {
  auto engine = std::make_shared<BatchEngine>(model_, BatchEngineOptions{kStepTokens});
  std::vector<BatchStepStats> steps;
  std::mutex steps_mutex;
  std::atomic<bool> decoding{false};
  engine->set_step_observer([&](const BatchStepStats& s) {
    std::lock_guard<std::mutex> lock(steps_mutex);
    if (decoding) steps.push_back(s);
  });
  constexpr int kSequences = 4, kTokens = 40;
  std::vector<std::unique_ptr<Session>> sessions;
  std::mt19937_64 rng(5);
  for (int t = 0; t < kSequences; ++t) {
    sessions.push_back(std::make_unique<Session>(model_, options(engine)));
    sessions.back()->prefill(random_tokens(8, rng));
  }
  decoding = true;
  std::vector<std::thread> workers;
  for (int t = 0; t < kSequences; ++t) {
    workers.emplace_back([&, t] {
      for (int i = 0; i < kTokens; ++i) {
        sessions[t]->decode(greedy(sessions[t]->logits()));
        std::this_thread::sleep_for(std::chrono::microseconds(300 + 200 * t));
      }
    });
  }
  for (auto& w : workers) w.join();
  std::lock_guard<std::mutex> lock(steps_mutex);
  int full = 0;
  for (const BatchStepStats& s : steps) full += s.sequences == kSequences;
  // The first step may start before every thread has begun, the last ones after some end, and
  // a thread the machine's load holds back past the wait misses a step (slack for both).
  EXPECT_LE(steps.size(), size_t(kTokens + 10));
  EXPECT_GE(full, kTokens - 10) << steps.size() << " steps";
}

TEST_F(BatchEngineTest, AShortPrefillIsNotStarvedByALongOne) {
  auto engine = std::make_shared<BatchEngine>(model_, BatchEngineOptions{8});
  std::mt19937_64 rng(3);
  const auto long_prompt = random_tokens(3000, rng), short_prompt = random_tokens(8, rng);
  std::atomic<int64_t> long_done{0};
  std::atomic<int64_t> long_done_when_short_ended{-1};
  std::thread long_thread([&] {
    Session session(model_, options(engine));
    session.prefill(long_prompt, [&](int64_t done, int64_t) { long_done = done; });
  });
  while (long_done < 80) std::this_thread::yield();  // the long prefill is well under way
  Session short_session(model_, options(engine));
  short_session.prefill(short_prompt);
  long_done_when_short_ended = long_done.load();
  long_thread.join();
  EXPECT_EQ(short_session.position(), 8);
  // Sharing the 8-token budget, the short prompt needs 2 steps: far from the long one's end.
  EXPECT_LT(long_done_when_short_ended.load(), 3000 - 100);
}

TEST_F(BatchEngineTest, ACancelledPrefillLeavesAtAStepBoundaryAndOthersGoOn) {
  auto engine = std::make_shared<BatchEngine>(model_, BatchEngineOptions{kStepTokens});
  std::mt19937_64 rng(4);
  const auto prompt = random_tokens(400, rng), other = random_tokens(50, rng);
  std::atomic<bool> cancel{false};
  // The flag is raised from the engine's own thread once 48 rows have run, so the test does not
  // race the step loop: raised from the caller's progress callback, a loaded machine could let
  // the loop finish all 400 rows before the caller's thread ran again.
  int64_t rows_run = 0;
  engine->set_step_observer([&](const BatchStepStats& s) {
    rows_run += s.prompt_rows;
    if (rows_run >= 48) cancel = true;
  });
  Session cancelled(model_, options(engine));
  bool finished = cancelled.prefill(prompt, {}, &cancel);
  engine->set_step_observer({});
  EXPECT_FALSE(finished);
  EXPECT_EQ(cancelled.position() % kStepTokens, 0);  // whole steps only
  EXPECT_EQ(cancelled.position(), (48 + kStepTokens - 1) / kStepTokens * kStepTokens);
  Session next(model_, options(engine)), alone(model_, options());
  EXPECT_EQ(run_request(next, other, {50}, 3).tokens, run_request(alone, other, {50}, 3).tokens);
}

// Steps bounded in time (max_step_seconds): a long prefill beside decoders is cut into steps the
// time model sizes. With random budgets (from far below one row's cost to whole steps) every
// sequence still gets exactly what it gets alone, the prefill's tokens and logits included, and
// with a budget no row fits in, each step carries one prompt row beside the decode rows.
TEST_F(BatchEngineTest, TimeBoundedStepsCutPrefillsAndChangeNoResult) {
  std::mt19937_64 rng(6);
  const auto long_prompt = random_tokens(300, rng);
  Session alone_session(model_, options());
  const Reply alone = run_request(alone_session, long_prompt, {long_prompt.size()}, 4);
  for (int round = 0; round < 6; ++round) {
    BatchEngineOptions o{kStepTokens};
    // 1 us: no row fits; up to ~10 ms: a few rows to whole steps on a tiny model.
    o.max_step_seconds =
        round == 0 ? 1e-6 : std::exp(std::log(1e-6) + double(rng() % 1000) / 1000 * 9);
    o.max_prefill_step_seconds = round % 2 ? o.max_step_seconds : 0;
    auto engine = std::make_shared<BatchEngine>(model_, o);
    engine->calibrate(256);
    std::vector<BatchStepStats> steps;
    std::mutex steps_mutex;
    engine->set_step_observer([&](const BatchStepStats& s) {
      std::lock_guard<std::mutex> lock(steps_mutex);
      steps.push_back(s);
    });
    // A decoder runs the whole time the prefill does.
    Session decoder(model_, options(engine));
    decoder.prefill(random_tokens(6, rng));
    std::atomic<bool> prefilled{false};
    std::thread decoding([&] {
      while (!prefilled) decoder.decode(greedy(decoder.logits()));
    });
    Session prefilling(model_, options(engine));
    const Reply together =
        run_request(prefilling, long_prompt, random_pieces(long_prompt.size(), rng), 4);
    prefilled = true;
    decoding.join();
    SCOPED_TRACE("max_step_seconds=" + std::to_string(o.max_step_seconds));
    EXPECT_EQ(together.tokens, alone.tokens);
    EXPECT_EQ(together.logits, alone.logits);  // bitwise: however the prompt was cut
    std::lock_guard<std::mutex> lock(steps_mutex);
    int beside_decoders = 0;
    for (const BatchStepStats& s : steps) {
      EXPECT_LE(s.prompt_rows, kStepTokens);
      if (s.decode_rows > 0 && s.prompt_rows > 0) {
        ++beside_decoders;
        if (round == 0) {
          EXPECT_EQ(s.prompt_rows, 1);
        }
      }
    }
    if (round == 0) {
      // Some steps did carry the decoder (a loaded machine may run the decoder's thread late,
      // and the prefill then takes whole steps alone: not every step is a mixed one).
      EXPECT_GE(beside_decoders, 10);
    }
  }
}

// The time model learns a step's cost from the steps it sees: after steps of a known linear cost
// it predicts that cost, sizes prompt rows to a budget (deeper rows cost more), and a long run
// of decode-only steps does not unsettle what it knows of prompt rows.
// On a loaded machine the noise can drive the prompt-row terms to nothing (prompt rows seem
// free). A step whose decode rows already spend the budget must still take one prompt row,
// not every row "for free" (a 1 us bound once gave whole chunks beside a decoder).
TEST(StepTimeModelTest, AStepThatSpentItsBudgetTakesOneRowEvenWhenRowsSeemFree) {
  StepTimeModel model;
  std::mt19937_64 rng(8);
  for (int i = 0; i < 300; ++i) {
    StepShape shape;
    shape.add_rows(false, 100, 1 + int64_t(rng() % 4));
    shape.add_rows(true, int64_t(rng() % 1000), 1 + int64_t(rng() % 500));
    // Prompt rows seem to save time (noise): their terms are learnt negative, counted as 0.
    model.observe(shape, 0.004 + 0.0005 * double(shape.decode_rows) -
                             2e-6 * double(shape.prompt_rows) - 1e-12 * shape.attended);
  }
  ASSERT_TRUE(model.known());
  StepShape base;
  base.add_rows(false, 100, 4);
  // The engine asks with the time the step already takes (its share of a spent budget).
  const double spent = model.predict(base);
  EXPECT_EQ(model.prompt_rows_within(base, 0, spent, 500), 1);
  EXPECT_EQ(model.prompt_rows_within(base, 0, spent + 1.0, 500), 500);  // room: all it has
}

TEST(StepTimeModelTest, LearnsALinearCostAndSizesRowsToABudget) {
  // 2 ms a step, 0.5 ms a decode row, 1 ms a prompt row, 40 ns an attended position.
  auto cost = [](const StepShape& s) {
    return 0.002 + 0.0005 * double(s.decode_rows) + 0.001 * double(s.prompt_rows) +
           4e-8 * s.attended;
  };
  StepTimeModel model;
  EXPECT_FALSE(model.known());
  std::mt19937_64 rng(7);
  for (int i = 0; i < 300; ++i) {
    StepShape shape;
    shape.add_rows(false, int64_t(rng() % 30000), int64_t(rng() % 4));
    if (rng() % 3) shape.add_rows(true, int64_t(rng() % 30000), 1 + int64_t(rng() % 500));
    model.observe(shape, cost(shape));
  }
  ASSERT_TRUE(model.known());
  for (int64_t depth : {0, 2048, 24000}) {
    StepShape shape;
    shape.add_rows(false, 100, 2);
    shape.add_rows(true, depth, 128);
    EXPECT_NEAR(model.predict(shape), cost(shape), 1e-3 * cost(shape)) << depth;
  }
  // Decode-only steps for a long while: the prompt-row cost is still known.
  for (int i = 0; i < 5000; ++i) {
    StepShape shape;
    shape.add_rows(false, 5000, 4);
    model.observe(shape, cost(shape));
  }
  StepShape base;
  base.add_rows(false, 5000, 4);
  for (int64_t depth : {0, 24000}) {
    const int64_t rows = model.prompt_rows_within(base, depth, 0.1, 100000);
    StepShape with = base, one_more = base;
    with.add_rows(true, depth, rows);
    one_more.add_rows(true, depth, rows + 1);
    EXPECT_LE(cost(with), 0.1 * 1.01) << depth;
    EXPECT_GT(cost(one_more), 0.1 * 0.99) << depth;
  }
  EXPECT_LT(model.prompt_rows_within(base, 24000, 0.1, 100000),
            model.prompt_rows_within(base, 0, 0.1, 100000));
  EXPECT_EQ(model.prompt_rows_within(base, 0, 1e-9, 100), 1);  // always progress
  EXPECT_NEAR(model.prefill_rate(2048, 512), 512 / cost([] {
                                               StepShape s;
                                               s.add_rows(true, 2048, 512);
                                               return s;
                                             }()),
              1.0);
}

// Several generated rows in one step (MTP verification): the logits after every row, the same
// whether a long prefill shares the steps or not.
TEST_F(BatchEngineTest, GeneratedRowsGiveTheLogitsOfEveryRow) {
  auto engine = std::make_shared<BatchEngine>(model_, BatchEngineOptions{kStepTokens});
  std::mt19937_64 rng(5);
  const auto prompt = random_tokens(40, rng), drafts = random_tokens(3, rng),
             other = random_tokens(500, rng);
  const size_t vocab = size_t(model_->config().vocab_size);
  auto verify = [&](Session& session) {
    session.prefill(prompt);
    std::vector<float> all(drafts.size() * vocab);
    engine->feed_generated(session, drafts, all.data());
    EXPECT_EQ(session.position(), 43);
    // The last row's logits are the session's, to the bit (both are generated rows).
    EXPECT_EQ(std::vector<float>(all.end() - vocab, all.end()),
              std::vector<float>(session.logits().begin(), session.logits().end()));
    return all;
  };
  Session alone(model_, options(engine));
  const std::vector<float> expected = verify(alone);
  std::thread busy([&] {
    Session session(model_, options(engine));
    session.prefill(other);
  });
  Session shared(model_, options(engine));
  EXPECT_EQ(verify(shared), expected);
  busy.join();
}

TEST_F(BatchEngineTest, BadTokensThrowBeforeAnythingIsFed) {
  auto engine = std::make_shared<BatchEngine>(model_, BatchEngineOptions{kStepTokens});
  Session session(model_, options(engine));
  const std::vector<int32_t> bad = {1, 2, 100000};
  EXPECT_THROW(session.prefill(bad), Error);
  EXPECT_EQ(session.position(), 0);
  EXPECT_THROW(session.decode(-1), Error);
  session.prefill(std::span(bad).first(2));  // the engine still runs
  EXPECT_EQ(session.position(), 2);
}

}  // namespace
}  // namespace qmlx
