// DraftConstraint: speculative drafts observed tentatively and undone. Seeded random walks of
// pushes and pops (and tokens the caller takes for good) over replies that go through every
// phase (reasoning closed by the model and in time, a JSON value, a tool call opened inside a
// token, a call's grammar, the end of the turn, refused tokens): after every operation the
// constraint allows, refuses and forces exactly what a fresh one fed the same tokens does.
#include "server/scheduling/draft_constraint.h"

#include <gtest/gtest.h>

#include <random>

#include "grammar/json_schema_compiler.h"
#include "grammar/token_mask_tables.h"
#include "server/scheduling/tool_call_grammar.h"
#include "tests/server/qwen3_tokenizer.h"

namespace qmlx::server {
namespace {

using Json = nlohmann::ordered_json;
constexpr int32_t kImEnd = testing::kQwen3ImEnd;

using testing::qwen3_tokenizer;

struct Scenario {
  std::string name;
  std::string prompt;  // the rendered prompt's end (reasoning open or not)
  int max_tokens = 200;
  bool tools = false;
  std::string reply;  // what the model writes
};

class DraftConstraintTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (!qwen3_tokenizer()) GTEST_SKIP() << "npm test packages not installed";
    vocab_ = grammar::TokenVocabulary::from_tokenizer(*qwen3_tokenizer(), {kImEnd});
    const Json schema = Json::parse(
        R"({"type": "object", "required": ["city", "days"], "additionalProperties": false,
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}})");
    reply_tables_ =
        grammar::TokenMaskTables::build(grammar::compile_json_schema(schema, {}).grammar, vocab_);
    request_.tools = Json::parse(R"([{"type": "function", "function": {"name": "get_time",
        "parameters": {"type": "object", "required": ["zone"],
                       "properties": {"zone": {"type": "string"}}}}}])");
    request_.strict_tools = {"get_time"};
    call_tables_ = grammar::TokenMaskTables::build(
        grammar::compile_grammar(build_tool_call_grammar(request_, ToolCallFormat::kXml, true).text)
            .grammar,
        vocab_);
  }

  // The reply's constraints after `tokens`, observed one by one as the decode loop does.
  struct Constraints {
    ReplyConstraint reply;
    ToolCallConstraint tool_calls;
    DraftConstraint drafts;
    Constraints(const DraftConstraintTest& t, const Scenario& s)
        : reply(t.reply_tables_, s.prompt, s.max_tokens, *qwen3_tokenizer(),
                s.tools ? qwen3_tokenizer()->token_id("<tool_call>") : std::nullopt),
          tool_calls(s.tools ? t.call_tables_ : nullptr, t.request_for(s), s.prompt,
                     *qwen3_tokenizer(), {kImEnd}),
          drafts(reply, tool_calls, {kImEnd}) {}
    void observe(int32_t token) {
      reply.observe(token);
      tool_calls.observe(token);
    }
  };
  GenerationRequest request_for(const Scenario& s) const {
    return s.tools ? request_ : GenerationRequest{};
  }

  std::shared_ptr<const grammar::TokenVocabulary> vocab_;
  std::shared_ptr<const grammar::TokenMaskTables> reply_tables_, call_tables_;
  GenerationRequest request_;
};

std::vector<Scenario> scenarios() {
  const std::string think = "<|im_start|>assistant\n<think>\n";
  const std::string plain = "<|im_start|>assistant\n";
  return {
      // (The blank line after `</think>` is forced: the caller takes it, not the script.)
      {"reasoning then the value", think, 200, false,
       "Paris, five days.</think>{\"city\":\"Paris\",\"days\":5}"},
      // max_tokens 12 keeps 3 for the reply: the reasoning is closed in time, tokens forced.
      {"reasoning closed in time", think, 12, false,
       "I will think about this for quite a long while, since the question is hard."},
      {"a tool call instead of the value", plain, 200, true,
       "<tool_call>\n<function=get_time>\n<parameter=zone>\nCET\n</parameter>\n</function>\n"
       "</tool_call>"},
      {"the value with tools offered", plain, 200, true, "{\"city\":\"Oslo\",\"days\":12}"},
  };
}

// A random walk: the caller takes the scenario's tokens in order (or the token the constraint
// forces); before each, a step pushes some of the next ones (now and then a random token, which
// the grammar may refuse) and pops them all, or some then the rest, as speculation does.
TEST_P(DraftConstraintTest, PushedAndPoppedTokensLeaveNoTrace) {
  const Scenario s = scenarios()[size_t(GetParam())];
  std::vector<int32_t> script = qwen3_tokenizer()->encode(s.reply, true);
  script.push_back(kImEnd);
  std::mt19937_64 rng(uint64_t(GetParam()) * 7919 + 1);
  const std::vector<float> zeros(size_t(qwen3_tokenizer()->vocab_size()), 0.f);

  Constraints tested(*this, s);
  std::vector<int32_t> taken;  // the reply's tokens for good
  // Compares with fresh constraints fed `taken` and then `pushed`.
  auto expect_as_fresh = [&](const std::vector<int32_t>& pushed, const std::string& when) {
    // The caller's tokens as the decode loop takes them (a forced one through forced_token()),
    // then the pushed ones as if taken.
    Constraints fresh(*this, s);
    for (size_t i = 0; i < taken.size(); ++i) {
      if (auto f = fresh.reply.forced_token(int(i))) {
        ASSERT_EQ(*f, taken[i]) << s.name;
      }
      fresh.observe(taken[i]);
    }
    for (int32_t t : pushed) fresh.observe(t);
    fresh.drafts.start(int(taken.size() + pushed.size()));
    // Nothing is drafted after a stop token (the fresh constraint was never told it ended).
    const bool after_stop = !pushed.empty() && pushed.back() == kImEnd;
    ASSERT_EQ(tested.drafts.free(), fresh.drafts.free() && !after_stop) << s.name << ": " << when;
    const std::span<const float> a = tested.drafts.allowed(zeros);
    const std::vector<float> a_copy(a.begin(), a.end());
    const std::span<const float> b = fresh.drafts.allowed(zeros);
    ASSERT_TRUE(std::equal(a_copy.begin(), a_copy.end(), b.begin(), b.end()))
        << s.name << ": " << when;
    ASSERT_EQ(tested.reply.refused(), fresh.reply.refused()) << s.name << ": " << when;
    ASSERT_EQ(tested.tool_calls.refused(), fresh.tool_calls.refused()) << s.name << ": " << when;
  };
  size_t next = 0;  // the scripted token the model writes next
  int forced = 0;
  while (next < script.size() && taken.size() < size_t(s.max_tokens)) {
    tested.drafts.start(int(taken.size()));
    const std::string at = "after " + std::to_string(taken.size()) + " tokens";
    // A step: pushes while free (up to 4), each checked, then pops.
    std::vector<int32_t> pushed;
    const size_t want = rng() % 5;
    while (pushed.size() < want && tested.drafts.free()) {
      const size_t i = next + pushed.size();
      const int32_t token = (rng() % 4 == 0 || i >= script.size())
                                ? int32_t(rng() % uint64_t(qwen3_tokenizer()->vocab_size()))
                                : script[i];
      tested.drafts.push(token);
      pushed.push_back(token);
      ASSERT_NO_FATAL_FAILURE(
          expect_as_fresh(pushed, at + ", pushed " + std::to_string(pushed.size())));
    }
    if (!pushed.empty() && rng() % 2) {
      const int some = int(rng() % pushed.size());
      tested.drafts.pop(some);
      pushed.resize(pushed.size() - size_t(some));
      ASSERT_NO_FATAL_FAILURE(expect_as_fresh(pushed, at + ", popped some"));
    }
    tested.drafts.pop(int(pushed.size()));
    ASSERT_NO_FATAL_FAILURE(expect_as_fresh({}, at + ", popped all"));
    // The caller takes the next token: forced, or the script's.
    if (auto f = tested.reply.forced_token(int(taken.size()))) {
      tested.observe(*f);
      taken.push_back(*f);
      ++forced;
      continue;
    }
    tested.observe(script[next]);
    taken.push_back(script[next++]);
  }
  if (s.max_tokens < 100) {
    EXPECT_GT(forced, 0) << s.name << ": the reasoning was never closed in time";
  } else {
    EXPECT_EQ(next, script.size()) << s.name;
    // The scripted reply is valid: the whole of it was taken without a refusal.
    EXPECT_EQ(tested.reply.refused() + tested.tool_calls.refused(), 0) << s.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Replies, DraftConstraintTest, ::testing::Range(0, 4));

// Tags spelled in ordinary tokens: a popped draft that began one must not let the next real
// token complete it (the watchers' tails come back too).
using DraftConstraintTagTest = DraftConstraintTest;

TEST_F(DraftConstraintTagTest, APoppedPartialTagIsForgotten) {
  const Tokenizer& tok = *qwen3_tokenizer();
  const std::vector<float> zeros(size_t(tok.vocab_size()), 0.f);
  auto text_tokens = [&](const std::string& text) { return tok.encode(text, false); };
  for (const Scenario& s : {scenarios()[0], scenarios()[2]}) {
    // Reasoning (`</think>`) for the first; a call's opening (`<tool_call>`) for the other.
    const std::string tag = s.tools ? "<tool_call>" : "</think>";
    const std::string head = tag.substr(0, tag.size() / 2), rest = tag.substr(tag.size() / 2);
    Constraints tested(*this, s), fresh(*this, s);
    if (s.tools) {  // the reply's first bytes decide that it opens no reasoning
      for (int32_t t : text_tokens("Sure.")) {
        tested.observe(t);
        fresh.observe(t);
      }
    }
    tested.drafts.start(0);
    const std::vector<int32_t> popped = text_tokens(head);
    for (int32_t t : popped) tested.drafts.push(t);
    tested.drafts.pop(int(popped.size()));
    for (int32_t t : text_tokens(rest)) {
      tested.observe(t);
      fresh.observe(t);
    }
    tested.drafts.start(0);
    fresh.drafts.start(0);
    EXPECT_EQ(tested.drafts.free(), fresh.drafts.free()) << tag;
    const std::span<const float> a = tested.drafts.allowed(zeros);
    const std::vector<float> a_copy(a.begin(), a.end());
    const std::span<const float> b = fresh.drafts.allowed(zeros);
    EXPECT_TRUE(std::equal(a_copy.begin(), a_copy.end(), b.begin(), b.end())) << tag;
    // And the whole tag does count: the watcher still works after the pop.
    Constraints whole(*this, s);
    for (int32_t t : text_tokens((s.tools ? "Sure." : "") + tag)) whole.observe(t);
    whole.drafts.start(0);
    const std::span<const float> c = whole.drafts.allowed(zeros);
    EXPECT_FALSE(std::equal(a_copy.begin(), a_copy.end(), c.begin(), c.end()) &&
                 tested.drafts.free() == whole.drafts.free())
        << tag << ": the tag changes nothing here, so this test cannot fail";
  }
}

}  // namespace
}  // namespace qmlx::server
