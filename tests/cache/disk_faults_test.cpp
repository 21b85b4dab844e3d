// Faults in the cache folder while serving (issue 17, rows 2 and 9): the folder deleted,
// replaced by a regular file, read-only or full. None of them may throw out of the cache; each
// is a miss or a skipped checkpoint, counted by kind in disk_errors, and the tier recovers by
// itself once the fault is gone: it recreates its folders, forgets what vanished and captures it
// again. A write that fails removes the chunks it wrote, a full disk makes room by the eviction
// policy, and chunks that no snapshot names (left by a crash) are collected on open.
#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>
#include <fstream>

#include "base/fault_env.h"
#include "cache_fixture.h"

namespace qmlx {
namespace {

namespace fs = std::filesystem;
using test::concat;
using test::make_tokens;

class DiskFaults : public test::CacheTest {
 protected:
  // Files below the cache folder whose name ends with `ext` (".kv", ".snap", ".tmp").
  size_t files_with(const std::string& ext) const {
    size_t n = 0;
    if (!fs::is_directory(dir_.path())) return 0;
    for (const auto& e : fs::recursive_directory_iterator(dir_.path())) {
      n += e.is_regular_file() && e.path().extension() == ext;
    }
    return n;
  }
  uint64_t disk_errors(const PrefixCache& cache, const std::string& kind) const {
    const LabeledCounts errors = cache.stats().disk_errors;
    auto it = errors.find(kind);
    return it == errors.end() ? 0 : it->second;
  }
};

TEST_F(DiskFaults, DeletedFolderIsAMissThenRecreated) {
  for (const bool fsync : {true, false}) {
    config_.fsync = fsync;
    auto cache = open();
    std::vector<int32_t> a = make_tokens(51, 40);
    ASSERT_TRUE(capture(*cache, a, SnapshotKind::kPromptEnd));
    ASSERT_TRUE(restore_and_check(*cache, concat(a, {7})).hit);

    fs::remove_all(dir_.path());  // `rm -rf <disk_cache_dir>` while serving
    RestoreResult gone = restore_and_check(*cache, concat(a, {7}));
    EXPECT_FALSE(gone.hit);
    EXPECT_GE(disk_errors(*cache, "missing"), 1u);
    EXPECT_TRUE(cache->lookup(concat(a, {7})).empty()) << "the vanished snapshot stays indexed";

    // The next checkpoint recreates the folders; the same prompt is captured and hits again.
    std::vector<int32_t> b = make_tokens(52, 40);
    ASSERT_TRUE(capture(*cache, b, SnapshotKind::kPromptEnd));
    EXPECT_EQ(restore_and_check(*cache, concat(b, {7})).cached_tokens, 40);
    ASSERT_TRUE(capture(*cache, a, SnapshotKind::kPromptEnd));
    EXPECT_EQ(restore_and_check(*cache, concat(a, {7})).cached_tokens, 40);
    EXPECT_EQ(cache->stats().checkpoint_writes.at("prompt_end"), 3u);
    // Nothing is lost on a restart: the recreated store is a valid one.
    cache.reset();
    cache = open();
    EXPECT_EQ(restore_and_check(*cache, concat(b, {7})).cached_tokens, 40);
    cache.reset();
    fs::remove_all(dir_.path());
  }
}

TEST_F(DiskFaults, DeletedFolderUnderTheRamTierKeepsHitting) {
  config_.memory_prefix_cache = true;
  auto cache = open();
  std::vector<int32_t> a = make_tokens(53, 40);
  ASSERT_TRUE(capture(*cache, a, SnapshotKind::kPromptEnd));
  fs::remove_all(dir_.path());
  EXPECT_EQ(restore_and_check(*cache, concat(a, {7})).tier, "ram");
  // The next write notices the folder is gone, recreates it and persists what it writes.
  std::vector<int32_t> b = make_tokens(54, 40);
  ASSERT_TRUE(capture(*cache, b, SnapshotKind::kPromptEnd));
  EXPECT_GE(disk_errors(*cache, "missing"), 1u);
  EXPECT_EQ(files_with(".snap"), 1u);
  EXPECT_EQ(restore_and_check(*cache, concat(a, {7})).tier, "ram");
  cache.reset();
  cache = open();
  EXPECT_EQ(restore_and_check(*cache, concat(b, {7})).tier, "disk");
  EXPECT_FALSE(restore_and_check(*cache, concat(a, {7})).hit);
}

TEST_F(DiskFaults, AdminOperationsOnADeletedOrReplacedFolderAnswer) {
  auto cache = open();
  std::vector<int32_t> a = make_tokens(61, 40);
  ASSERT_TRUE(capture(*cache, a, SnapshotKind::kPromptEnd));
  const Hash128 id = cache->list().at(0).id;
  fs::remove_all(dir_.path());
  EXPECT_FALSE(cache->verify(id).ok);
  EXPECT_FALSE(cache->pin(id, true).ok());
  cache->gc();
  EXPECT_TRUE(cache->clear().ok()) << "a deleted folder is as cleared";
  EXPECT_TRUE(fs::is_directory(cache->store_dir()));
  fs::remove_all(dir_.path());
  std::ofstream(dir_.path()) << "not a folder";
  EXPECT_FALSE(cache->clear().ok());
  cache->gc();
  fs::remove(dir_.path());
  ASSERT_TRUE(capture(*cache, a, SnapshotKind::kPromptEnd));
  EXPECT_EQ(restore_and_check(*cache, concat(a, {7})).cached_tokens, 40);
  for (const VerifyReport& report : cache->verify_all()) EXPECT_TRUE(report.ok) << report.detail;
}

TEST_F(DiskFaults, FolderReplacedByAFileSkipsCheckpointsUntilRemoved) {
  auto cache = open();
  std::vector<int32_t> a = make_tokens(55, 40);
  ASSERT_TRUE(capture(*cache, a, SnapshotKind::kPromptEnd));
  fs::remove_all(dir_.path());
  std::ofstream(dir_.path()) << "not a folder";

  EXPECT_FALSE(restore_and_check(*cache, concat(a, {7})).hit);
  std::vector<int32_t> b = make_tokens(56, 40);
  capture(*cache, b, SnapshotKind::kPromptEnd);
  capture(*cache, b, SnapshotKind::kPromptEnd);
  EXPECT_FALSE(restore_and_check(*cache, concat(b, {7})).hit);
  EXPECT_GE(disk_errors(*cache, "not_a_directory"), 2u);
  EXPECT_EQ(cache->stats().checkpoint_dropped.at("io"), 2u);

  fs::remove(dir_.path());  // the operator removes the file
  ASSERT_TRUE(capture(*cache, b, SnapshotKind::kPromptEnd));
  EXPECT_EQ(restore_and_check(*cache, concat(b, {7})).cached_tokens, 40);
}

TEST_F(DiskFaults, ReadOnlyFolderStillRestoresAndRecovers) {
  FaultEnv env(Env::posix());
  auto cache = open(&env);
  std::vector<int32_t> a = make_tokens(57, 40);
  ASSERT_TRUE(capture(*cache, a, SnapshotKind::kPromptEnd));
  env.fail_nth(FaultEnv::Op::kWrite, 1, Status::IOError("read-only file system").with_errno(EROFS),
               /*persistent=*/true);
  std::vector<int32_t> b = make_tokens(58, 40);
  capture(*cache, b, SnapshotKind::kPromptEnd);
  EXPECT_EQ(disk_errors(*cache, "read_only"), 1u);
  EXPECT_EQ(restore_and_check(*cache, concat(a, {7})).cached_tokens, 40);
  EXPECT_FALSE(restore_and_check(*cache, concat(b, {7})).hit);
  EXPECT_EQ(files_with(".kv"), 2u) << "only the chunks of a: the failed write left none";

  env.clear_faults();
  ASSERT_TRUE(capture(*cache, b, SnapshotKind::kPromptEnd));
  EXPECT_EQ(restore_and_check(*cache, concat(b, {7})).cached_tokens, 40);
}

TEST_F(DiskFaults, FailedSnapshotWriteRemovesItsChunks) {
  FaultEnv env(Env::posix());
  auto cache = open(&env);
  // 40 tokens: two chunk files, then the snapshot, which fails.
  env.fail_nth(FaultEnv::Op::kWrite, 3, Status::IOError("EIO").with_errno(EIO));
  std::vector<int32_t> a = make_tokens(59, 40);
  capture(*cache, a, SnapshotKind::kPromptEnd);
  EXPECT_EQ(cache->stats().checkpoint_dropped.at("io"), 1u);
  EXPECT_EQ(disk_errors(*cache, "io"), 1u);
  EXPECT_EQ(files_with(".kv"), 0u);
  EXPECT_EQ(files_with(".tmp"), 0u);
  EXPECT_EQ(cache->stats().disk_cache_chunks, 0u);
  // The chunks are no longer indexed, so the next capture writes them again and hits.
  ASSERT_TRUE(capture(*cache, a, SnapshotKind::kPromptEnd));
  EXPECT_EQ(restore_and_check(*cache, concat(a, {7})).cached_tokens, 40);
}

TEST_F(DiskFaults, FullDiskEvictsToMakeRoomAndKeepsHitting) {
  FaultEnv env(Env::posix());
  auto cache = open(&env);
  std::vector<int32_t> first = make_tokens(60, 40);
  ASSERT_TRUE(capture(*cache, first, SnapshotKind::kPromptEnd));
  uint64_t one = 0;
  ASSERT_TRUE(env.tree_size(dir_.path(), &one).ok());
  env.limit_space(dir_.path(), one * 5 / 2);  // room for two such conversations, not three
  for (uint64_t seed = 61; seed < 71; ++seed) {
    std::vector<int32_t> tokens = make_tokens(seed, 40);
    capture(*cache, tokens, SnapshotKind::kPromptEnd);
    EXPECT_EQ(restore_and_check(*cache, concat(tokens, {7})).cached_tokens, 40) << seed;
    // No orphan: every chunk on disk is named by a snapshot on disk.
    EXPECT_EQ(files_with(".kv"), 2 * files_with(".snap")) << seed;
  }
  EXPECT_GE(cache->stats().checkpoint_writes.at("prompt_end"), 10u);
  EXPECT_GE(disk_errors(*cache, "no_space"), 1u);
  uint64_t evicted = 0;
  for (const auto& [reason, n] : cache->stats().evictions) evicted += n;
  EXPECT_GE(evicted, 8u);
}

TEST_F(DiskFaults, DiskFilledBySomethingElseEvictsOnlyOncePerEpisode) {
  FaultEnv env(Env::posix());
  auto cache = open(&env);
  for (uint64_t seed = 72; seed < 75; ++seed) {
    ASSERT_TRUE(capture(*cache, make_tokens(seed, 40), SnapshotKind::kPromptEnd));
  }
  env.fail_nth(FaultEnv::Op::kWrite, 1, Status::NoSpace("disk full").with_errno(ENOSPC),
               /*persistent=*/true);
  for (uint64_t seed = 75; seed < 80; ++seed) {
    capture(*cache, make_tokens(seed, 40), SnapshotKind::kPromptEnd);
  }
  EXPECT_EQ(cache->stats().checkpoint_dropped.at("no_space"), 5u);
  // One round of eviction (about a tenth of the store, at least one write's worth), not five.
  EXPECT_EQ(cache->list().size(), 2u);
  EXPECT_EQ(files_with(".kv"), 2 * files_with(".snap"));
  env.clear_faults();
  ASSERT_TRUE(capture(*cache, make_tokens(75, 40), SnapshotKind::kPromptEnd));
  EXPECT_EQ(restore_and_check(*cache, make_tokens(75, 41)).cached_tokens, 40);
}

TEST_F(DiskFaults, OrphanChunksOfACrashAreCollectedOnOpen) {
  int64_t per_write = 0;
  {
    FaultEnv env(Env::posix());
    auto cache = open(&env);
    ASSERT_TRUE(capture(*cache, make_tokens(81, 40), SnapshotKind::kPromptEnd));
    const int64_t before = env.mutating_ops();
    ASSERT_TRUE(capture(*cache, make_tokens(82, 40), SnapshotKind::kPromptEnd));
    per_write = env.mutating_ops() - before;
  }
  {
    // The process dies after the chunks of the next snapshot are written, before the snapshot
    // (what it wrote stays on disk: the process died, not the machine).
    FaultEnv env(Env::posix());
    auto cache = open(&env);
    env.crash_after(per_write * 3 / 4);
    capture(*cache, make_tokens(83, 40), SnapshotKind::kPromptEnd);
  }
  ASSERT_GT(files_with(".kv"), 2 * files_with(".snap")) << "the crash left no orphan to collect";
  auto cache = open();
  EXPECT_EQ(files_with(".kv"), 2 * files_with(".snap"));
  EXPECT_GT(cache->stats().evictions.at("unreferenced_chunk"), 0u);
  EXPECT_EQ(restore_and_check(*cache, make_tokens(81, 41)).cached_tokens, 40);
}

}  // namespace
}  // namespace qmlx
