// Disk failures while writing: ENOSPC and EIO drop the write, count it and keep serving; a
// process killed at any instant (>= 100 random cut points, with the unsynced data lost or cut
// at random) leaves a store that reopens consistent and never restores a wrong state.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "base/error.h"
#include "base/fault_env.h"
#include "cache_fixture.h"

namespace qmlx {
namespace {

using test::concat;
using test::make_tokens;
using test::prefix;

class Faults : public test::CacheTest {};

TEST_F(Faults, NoSpaceDropsWritesCountsThemAndKeepsServing) {
  FaultEnv env(Env::posix());
  auto cache = open(&env);
  std::vector<int32_t> first = make_tokens(31, 40);
  capture(*cache, first, SnapshotKind::kMessageBoundary);
  std::vector<int32_t> low_value = make_tokens(30, 40);
  capture(*cache, low_value, SnapshotKind::kInterval);
  env.fail_nth(FaultEnv::Op::kWrite, 1, Status::NoSpace("disk full"), /*persistent=*/true);
  capture(*cache, make_tokens(32, 40), SnapshotKind::kMessageBoundary);
  capture(*cache, concat(first, make_tokens(33, 20)), SnapshotKind::kPromptEnd);
  CacheStats stats = cache->stats();
  EXPECT_EQ(stats.checkpoint_dropped.at("no_space"), 2u);
  EXPECT_EQ(stats.checkpoint_writes.at("message_boundary"), 1u);
  // The full disk made room once, by the policy (the least valuable snapshot), then gave up.
  EXPECT_EQ(stats.evictions.at("low_value"), 1u);
  EXPECT_FALSE(restore_and_check(*cache, concat(low_value, {5})).hit);
  EXPECT_EQ(restore_and_check(*cache, concat(first, {5})).cached_tokens, 40);
  EXPECT_FALSE(restore_and_check(*cache, make_tokens(32, 41)).hit);

  env.clear_faults();  // space freed: writes resume
  EXPECT_TRUE(capture(*cache, make_tokens(32, 40), SnapshotKind::kMessageBoundary));
  EXPECT_EQ(restore_and_check(*cache, make_tokens(32, 41)).cached_tokens, 40);
}

TEST_F(Faults, IoErrorOnSyncOrRenameDropsTheWrite) {
  FaultEnv env(Env::posix());
  auto cache = open(&env);
  env.fail_nth(FaultEnv::Op::kSync, 1, Status::IOError("EIO"));
  capture(*cache, make_tokens(34, 40), SnapshotKind::kPromptEnd);
  env.fail_nth(FaultEnv::Op::kRename, 2, Status::IOError("EIO"));
  capture(*cache, make_tokens(35, 40), SnapshotKind::kPromptEnd);
  EXPECT_EQ(cache->stats().checkpoint_dropped.at("io"), 2u);
  EXPECT_FALSE(restore_and_check(*cache, make_tokens(34, 41)).hit);
  EXPECT_FALSE(restore_and_check(*cache, make_tokens(35, 41)).hit);
  // No temporary files are left behind by the failed writes.
  for (const auto& e : std::filesystem::recursive_directory_iterator(cache->store_dir())) {
    EXPECT_NE(e.path().extension(), ".tmp") << e.path();
  }
}

// The workload of one crash trial: two turns of one conversation and a branch of it.
std::vector<std::pair<std::vector<int32_t>, SnapshotKind>> crash_workload() {
  std::vector<int32_t> turn1 = make_tokens(41, 40);
  std::vector<int32_t> turn2 = concat(turn1, make_tokens(42, 33));
  std::vector<int32_t> branch = concat(prefix(turn1, 20), make_tokens(43, 30));
  return {{turn1, SnapshotKind::kMessageBoundary},
          {turn2, SnapshotKind::kPromptEnd},
          {branch, SnapshotKind::kGenerationEnd}};
}

TEST_F(Faults, KilledAtRandomInstantsNeverRestoresWrongState) {
  // Count the mutating operations of a full run, to draw cut points across all of it.
  int64_t total_ops = 0;
  {
    test::TempDir dir;
    config_.disk_cache_dir = dir.path();
    FaultEnv env(Env::posix());
    auto cache = open(&env);
    for (const auto& [tokens, kind] : crash_workload()) capture(*cache, tokens, kind);
    total_ops = env.mutating_ops();
  }
  ASSERT_GT(total_ops, 20);
  std::mt19937_64 rng(2024);
  int hits = 0, restored_snapshots = 0;
  for (int trial = 0; trial < 120; ++trial) {
    test::TempDir dir;
    config_.disk_cache_dir = dir.path();
    FaultEnv env(Env::posix());
    env.crash_after(int64_t(rng() % uint64_t(total_ops + 1)));
    try {
      auto cache = open(&env);
      for (const auto& [tokens, kind] : crash_workload()) capture(*cache, tokens, kind);
    } catch (const Error&) {
      // The crash hit the store's creation: the server would not have started.
    }
    const auto mode =
        trial % 2 ? FaultEnv::CrashMode::kRandomCut : FaultEnv::CrashMode::kDropUnsynced;
    ASSERT_TRUE(env.simulate_crash(mode, rng()).ok());

    auto cache = open();
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir.path())) {
      ASSERT_NE(e.path().extension(), ".tmp") << "leftover after reopen: " << e.path();
    }
    for (const VerifyReport& report : cache->verify_all()) {
      EXPECT_TRUE(report.ok) << "trial " << trial << ": " << report.detail;
    }
    restored_snapshots += int(cache->list().size());
    for (const auto& [tokens, kind] : crash_workload()) {
      RestoreResult r = restore_and_check(*cache, concat(tokens, {1, 2, 3}));
      EXPECT_TRUE(r.rejected.empty()) << "trial " << trial << ": " << r.rejected[0].detail;
      hits += r.hit;
    }
  }
  // The cut points cover the whole run: some trials kept everything, some nothing.
  EXPECT_GT(hits, 0);
  EXPECT_LT(hits, 120 * 3);
  EXPECT_GT(restored_snapshots, 0);
}

}  // namespace
}  // namespace qmlx
