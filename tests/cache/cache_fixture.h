// Shared set-up for PrefixCache tests: a config in a temporary folder with 16-token chunks,
// and helpers to capture a synthetic conversation and check a restore against the state a
// model would have after the restored tokens.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "cache/prefix_cache.h"
#include "fake_session.h"

namespace qmlx::test {

inline constexpr int kChunkTokens = 16;

inline CacheConfig test_config(const std::string& dir) {
  CacheConfig c = CacheConfig::defaults();
  c.disk_cache_dir = dir;
  c.chunk_tokens = kChunkTokens;
  c.memory_prefix_cache = false;
  c.disk_kv_cache = true;
  c.restore_guard_enabled = false;
  c.fsync = true;
  return c;
}

inline std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

inline std::vector<int32_t> prefix(const std::vector<int32_t>& t, size_t n) {
  return std::vector<int32_t>(t.begin(), t.begin() + std::ptrdiff_t(n));
}

class CacheTest : public ::testing::Test {
 protected:
  explicit CacheTest(StateLayout layout = hybrid_layout())
      : layout_(std::move(layout)),
        fingerprint_(model_fingerprint("test model", layout_)),
        config_(test_config(dir_.path())) {}

  std::unique_ptr<PrefixCache> open(Env* env = Env::posix()) {
    return std::make_unique<PrefixCache>(config_, fingerprint_, layout_, env);
  }

  // Captures the state after `tokens` and waits for the write.
  bool capture(PrefixCache& cache, const std::vector<int32_t>& tokens, SnapshotKind kind) {
    FakeSession session = FakeSession::prefilled(layout_, tokens);
    bool queued = cache.capture(session, tokens, kind);
    cache.flush();
    return queued;
  }

  // Restores for `prompt` and checks the installed state is exactly the state after the
  // restored tokens (K/V and, for snapshots, states and logits).
  RestoreResult restore_and_check(PrefixCache& cache, const std::vector<int32_t>& prompt) {
    FakeSession sink(layout_);
    RestoreResult result = cache.restore(prompt, sink);
    if (!result.hit) {
      EXPECT_EQ(sink.position(), 0);
      return result;
    }
    FakeSession expected = FakeSession::prefilled(layout_, prefix(prompt, result.cached_tokens));
    if (!result.point.is_snapshot) expected.set_logits({});
    EXPECT_TRUE(sink.same_state(expected)) << "wrong restore at " << result.cached_tokens;
    return result;
  }

  TempDir dir_;
  StateLayout layout_;
  Hash128 fingerprint_;
  CacheConfig config_;
};

}  // namespace qmlx::test
