// The speculative decoding test harness (speculative_harness.h).
#include "speculative_harness.h"

#include <gtest/gtest.h>

#include <cstring>

namespace qmlx::testing {

SessionOptions options_of(DType kv, int prefill_chunk) {
  SessionOptions options;
  options.kv_dtype = kv;
  options.prefill_chunk = prefill_chunk;
  return options;
}

Generation plain_greedy(std::shared_ptr<const Model> model, DType kv,
                        std::span<const int32_t> prompt, size_t n) {
  Session session(model, options_of(kv, 7));
  session.prefill(prompt);
  Sampler sampler({}, -1);
  Generation g;
  while (true) {
    auto logits = session.logits();
    g.logits.emplace_back(logits.begin(), logits.end());
    g.tokens.push_back(sampler.sample(logits));
    if (g.tokens.size() == n) return g;
    session.decode(g.tokens.back());
  }
}

std::unique_ptr<Session> plain_session(std::shared_ptr<const Model> model, DType kv,
                                       std::span<const int32_t> prompt,
                                       std::span<const int32_t> generated) {
  auto session = std::make_unique<Session>(model, options_of(kv, 7));
  session->prefill(prompt);
  for (int32_t t : generated) session->decode(t);
  return session;
}

Generation speculative(SpeculativeDecoder& decoder, Sampler& sampler, size_t n,
                       const std::function<int(size_t)>& keep_at_most) {
  Generation g;
  auto logits = decoder.session().logits();
  g.logits.emplace_back(logits.begin(), logits.end());
  g.tokens.push_back(sampler.sample(logits, g.tokens));
  for (size_t step = 0; g.tokens.size() < n; ++step) {
    const int room = int(n - g.tokens.size());
    const SpeculativeStep& s = decoder.step(g.tokens.back(), sampler, g.tokens, room - 1);
    int used = std::min<int>(int(s.tokens.size()), room);
    if (keep_at_most && keep_at_most(step) > 0) used = std::min(used, keep_at_most(step));
    for (int i = 0; i < used; ++i) {
      g.tokens.push_back(s.tokens[i]);
      g.logits.emplace_back(s.logits[i].begin(), s.logits[i].end());
    }
    decoder.keep(used);
  }
  return g;
}

void expect_same(const Generation& plain, const Generation& spec, const std::string& what) {
  ASSERT_EQ(plain.tokens, spec.tokens) << what;
  for (size_t i = 0; i < plain.logits.size(); ++i)
    ASSERT_EQ(0, std::memcmp(plain.logits[i].data(), spec.logits[i].data(),
                             plain.logits[i].size() * sizeof(float)))
        << what << ": logits of token " << i << " differ";
}

void expect_same_state(const SessionState& a, const SessionState& b, const std::string& what) {
  EXPECT_EQ(a.position, b.position) << what;
  EXPECT_EQ(a.keys, b.keys) << what;
  EXPECT_EQ(a.values, b.values) << what;
  for (const std::vector<float>& conv : a.conv_states)  // read back, not left empty
    EXPECT_FALSE(conv.empty()) << what;
  EXPECT_EQ(a.conv_states, b.conv_states) << what;
  EXPECT_EQ(a.ssm_states, b.ssm_states) << what;
  EXPECT_EQ(a.logits, b.logits) << what;
}

}  // namespace qmlx::testing
