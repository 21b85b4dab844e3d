#include "fake_session.h"

#include "base/logging.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <stdexcept>

namespace qmlx::test {
namespace {

uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

void fill_bytes(uint64_t seed, uint8_t* out, size_t n) {
  for (size_t i = 0; i < n; i += 8) {
    seed = mix(seed);
    std::memcpy(out + i, &seed, std::min<size_t>(8, n - i));
  }
}

void fill_floats(uint64_t seed, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    seed = mix(seed);
    out[i] = float(int64_t(seed % 2001) - 1000) / 1000.0f;
  }
}

}  // namespace

StateLayout hybrid_layout() {
  StateLayout l;
  l.num_layers = 5;
  l.recurrent_layers = {0, 1, 3};
  l.attention_layers = {2, 4};
  l.kv_heads = 2;
  l.head_dim = 8;
  l.kv_dtype = DType::kBF16;
  l.conv_rows = 3;
  l.conv_channels = 16;
  l.ssm_heads = 2;
  l.ssm_key_dim = 8;
  l.ssm_value_dim = 8;
  l.vocab_size = 64;
  return l;
}

StateLayout attention_only_layout() {
  StateLayout l;
  l.num_layers = 2;
  l.attention_layers = {0, 1};
  l.kv_heads = 2;
  l.head_dim = 8;
  l.kv_dtype = DType::kF16;
  l.vocab_size = 64;
  return l;
}

FakeSession FakeSession::prefilled(const StateLayout& layout, std::span<const int32_t> tokens) {
  FakeSession s(layout);
  const int64_t n = int64_t(tokens.size());
  s.reset(n);
  const size_t row = layout.kv_row_bytes();
  uint64_t prefix = 0x51ED;
  for (int64_t p = 0; p < n; ++p) {
    prefix = mix(prefix ^ uint64_t(uint32_t(tokens[p])));
    for (size_t a = 0; a < layout.attention_layers.size(); ++a) {
      fill_bytes(prefix ^ (a * 2 + 1), s.state_.keys[a].data() + p * row, row);
      fill_bytes(prefix ^ (a * 2 + 2), s.state_.values[a].data() + p * row, row);
    }
  }
  for (size_t r = 0; r < layout.recurrent_layers.size(); ++r) {
    fill_floats(prefix ^ (100 + r), s.state_.conv_states[r].data(), s.state_.conv_states[r].size());
    fill_floats(prefix ^ (200 + r), s.state_.ssm_states[r].data(), s.state_.ssm_states[r].size());
  }
  if (n > 0) {
    s.state_.logits.resize(size_t(layout.vocab_size));
    fill_floats(prefix ^ 300, s.state_.logits.data(), s.state_.logits.size());
  }
  return s;
}

void FakeSession::read_kv_rows(int a, int64_t begin, int64_t end, uint8_t* k_out,
                               uint8_t* v_out) const {
  if (begin < 0 || end > state_.position || begin > end) throw std::out_of_range("kv rows");
  const size_t row = layout_.kv_row_bytes();
  std::memcpy(k_out, state_.keys[a].data() + begin * row, size_t(end - begin) * row);
  std::memcpy(v_out, state_.values[a].data() + begin * row, size_t(end - begin) * row);
}

void FakeSession::read_recurrent(int r, float* conv_out, float* ssm_out) const {
  std::memcpy(conv_out, state_.conv_states[r].data(), layout_.conv_state_bytes());
  std::memcpy(ssm_out, state_.ssm_states[r].data(), layout_.ssm_state_bytes());
}

void FakeSession::reset(int64_t position) {
  state_ = SessionState{};
  state_.position = position;
  const size_t bytes = size_t(position) * layout_.kv_row_bytes();
  state_.keys.assign(layout_.attention_layers.size(), std::vector<uint8_t>(bytes));
  state_.values.assign(layout_.attention_layers.size(), std::vector<uint8_t>(bytes));
  state_.conv_states.assign(layout_.recurrent_layers.size(),
                            std::vector<float>(layout_.conv_state_bytes() / 4));
  state_.ssm_states.assign(layout_.recurrent_layers.size(),
                           std::vector<float>(layout_.ssm_state_bytes() / 4));
}

void FakeSession::write_kv_rows(int a, int64_t begin, int64_t end, const uint8_t* k,
                                const uint8_t* v) {
  if (begin < 0 || end > state_.position || begin > end) throw std::out_of_range("kv rows");
  const size_t row = layout_.kv_row_bytes();
  std::memcpy(state_.keys[a].data() + begin * row, k, size_t(end - begin) * row);
  std::memcpy(state_.values[a].data() + begin * row, v, size_t(end - begin) * row);
}

void FakeSession::write_recurrent(int r, const float* conv, const float* ssm) {
  std::memcpy(state_.conv_states[r].data(), conv, layout_.conv_state_bytes());
  std::memcpy(state_.ssm_states[r].data(), ssm, layout_.ssm_state_bytes());
}

void FakeSession::set_logits(std::span<const float> logits) {
  state_.logits.assign(logits.begin(), logits.end());
}

bool FakeSession::same_state(const FakeSession& other) const {
  const SessionState& a = state_;
  const SessionState& b = other.state_;
  return a.position == b.position && a.keys == b.keys && a.values == b.values &&
         a.conv_states == b.conv_states && a.ssm_states == b.ssm_states && a.logits == b.logits;
}

std::vector<int32_t> make_tokens(uint64_t seed, size_t n) {
  std::vector<int32_t> tokens(n);
  for (size_t i = 0; i < n; ++i) {
    seed = mix(seed);
    tokens[i] = int32_t(seed % 50000);
  }
  return tokens;
}

TempDir::TempDir() {
  static std::atomic<int> counter{0};
  // /dev/shm keeps the many fsyncs of the crash tests cheap; FaultEnv models durability itself.
  std::string base = std::filesystem::exists("/dev/shm") ? "/dev/shm" : "/tmp";
  path_ = base + "/qmlx_cache_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() { std::filesystem::remove_all(path_); }

}  // namespace qmlx::test

namespace {
// The cache logs every rejection and dropped write; the tests assert on counters instead.
const bool kQuietLogs = (qmlx::set_log_level(qmlx::LogLevel::kError), true);
}  // namespace
