// Speculative decoding test harness, shared by the engine's tests (CPU) and the Vulkan model
// tests (the same promises on the device): greedy plain decoding, a speculative run driven like
// a caller drives SpeculativeDecoder, and the bit-for-bit comparison of the two.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/speculative.h"

namespace qmlx::testing {

// Tokens and the logits row each was chosen from.
struct Generation {
  std::vector<int32_t> tokens;
  std::vector<std::vector<float>> logits;
};

// A session's options: K/V dtype and prefill chunk (0: the model's default), no batch engine.
SessionOptions options_of(DType kv, int prefill_chunk = 0);

// n greedy tokens after `prompt`, decoded one by one (prefill in chunks of 7).
Generation plain_greedy(std::shared_ptr<const Model> model, DType kv,
                        std::span<const int32_t> prompt, size_t n);

// A plain session that prefilled `prompt` and decoded `generated` one by one.
std::unique_ptr<Session> plain_session(std::shared_ptr<const Model> model, DType kv,
                                       std::span<const int32_t> prompt,
                                       std::span<const int32_t> generated);

// Decodes n tokens with `decoder`'s session (prefilled by the caller); keep_at_most(step) > 0
// makes the caller use only that many of a step's tokens, as a stop would.
Generation speculative(SpeculativeDecoder& decoder, Sampler& sampler, size_t n,
                       const std::function<int(size_t)>& keep_at_most = {});

// The same tokens, and logits bit for bit (gtest assertions, labelled `what`).
void expect_same(const Generation& plain, const Generation& spec, const std::string& what);

// The same position, K/V rows, recurrent states and logits (gtest assertions).
void expect_same_state(const SessionState& a, const SessionState& b, const std::string& what);

}  // namespace qmlx::testing
