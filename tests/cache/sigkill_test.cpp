// A real SIGKILL of a process whose background writer is committing checkpoints, at random
// instants, 100 trials (the simulated power cuts of faults_test.cpp also lose unsynced data;
// this one checks the real process and thread teardown). After each kill the store reopens
// with no leftovers, every snapshot verifies, and every restore installs exactly the state of
// the restored tokens: never a wrong restore.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include "cache_fixture.h"

namespace qmlx {
namespace {

using test::concat;
using test::make_tokens;

class SigKill : public test::CacheTest {};

// Conversation i of the child's endless workload: a shared stem and a branch, so chunks are
// shared between snapshots and some writes only add a tail.
std::vector<int32_t> conversation(int i) {
  return concat(make_tokens(7, 40), make_tokens(1000 + uint64_t(i), size_t(10 + (i * 13) % 70)));
}

[[noreturn]] void write_forever(const CacheConfig& config, const Hash128& fingerprint,
                                const StateLayout& layout) {
  PrefixCache cache(config, fingerprint, layout);
  for (int i = 0;; ++i) {
    std::vector<int32_t> tokens = conversation(i % 400);
    test::FakeSession session = test::FakeSession::prefilled(layout, tokens);
    cache.capture(session, tokens,
                  i % 3 ? SnapshotKind::kMessageBoundary : SnapshotKind::kInterval);
  }
}

TEST_F(SigKill, KilledWriterNeverLeavesAWrongRestore) {
  config_.fsync = false;  // a killed process loses nothing the kernel has; speed up the trials
  std::mt19937_64 rng(77);
  int trials_with_snapshots = 0, restores = 0;
  for (int trial = 0; trial < 100; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    std::filesystem::remove_all(config_.disk_cache_dir);
    std::filesystem::create_directories(config_.disk_cache_dir);
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) write_forever(config_, fingerprint_, layout_);
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 40000));
    ASSERT_EQ(kill(child, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status));

    auto cache = open();
    for (const auto& e : std::filesystem::recursive_directory_iterator(config_.disk_cache_dir)) {
      ASSERT_NE(e.path().extension(), ".tmp") << "leftover after reopen: " << e.path();
    }
    for (const VerifyReport& report : cache->verify_all()) {
      ASSERT_TRUE(report.ok) << report.detail;
    }
    const size_t stored = cache->list().size();
    trials_with_snapshots += stored > 0;
    for (int i = 0; i < 400 && stored > 0; i += 7) {
      RestoreResult r = restore_and_check(*cache, concat(conversation(i), {1, 2}));
      ASSERT_TRUE(r.rejected.empty()) << r.rejected[0].detail;
      restores += r.hit;
    }
  }
  // The kill instants spread over start-up and steady writing.
  EXPECT_GT(trials_with_snapshots, 20);
  EXPECT_GT(restores, 0);
}

}  // namespace
}  // namespace qmlx
