// FakeSession: an in-memory StateSource and StateSink with deterministic synthetic state, the
// test double of the engine's Session. Like a real model, the K/V row at position p depends
// only on tokens [0, p], and the recurrent state and logits on all tokens, so two sessions that
// share a prefix share its rows and a restored state can be checked byte for byte.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "engine/session_state.h"

namespace qmlx::test {

// A hybrid layout (3 linear-attention layers, 2 full-attention) with small shapes.
StateLayout hybrid_layout();
// A layout with attention layers only.
StateLayout attention_only_layout();

class FakeSession final : public StateSource, public StateSink {
 public:
  explicit FakeSession(StateLayout layout) : layout_(std::move(layout)) {}
  // The state a model would have after consuming tokens.
  static FakeSession prefilled(const StateLayout& layout, std::span<const int32_t> tokens);

  const StateLayout& layout() const override { return layout_; }
  int64_t position() const override { return state_.position; }
  void read_kv_rows(int a, int64_t begin, int64_t end, uint8_t* k_out,
                    uint8_t* v_out) const override;
  void read_recurrent(int r, float* conv_out, float* ssm_out) const override;
  std::span<const float> logits() const override { return state_.logits; }

  void reset(int64_t position) override;
  void write_kv_rows(int a, int64_t begin, int64_t end, const uint8_t* k,
                     const uint8_t* v) override;
  void write_recurrent(int r, const float* conv, const float* ssm) override;
  void set_logits(std::span<const float> logits) override;

  const SessionState& state() const { return state_; }
  // Byte-for-byte equality of position, K/V rows [0, position), states and logits.
  bool same_state(const FakeSession& other) const;

 private:
  StateLayout layout_;
  SessionState state_;
};

// Token ids [0, n) of a conversation seeded by `seed`; a shared seed gives a shared prefix.
std::vector<int32_t> make_tokens(uint64_t seed, size_t n);

// A fresh empty directory for one test, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace qmlx::test
