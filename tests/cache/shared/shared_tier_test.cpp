// The shared tier seen through PrefixCache: two caches with separate disks (two servers) and
// one real Redis Cluster.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <future>

#include "base/error.h"
#include "base/fault_env.h"
#include "cache/admin.h"
#include "cache/prefix_cache.h"
#include "cache/shared_tier.h"
#include "cache_fixture.h"
#include "redis_cluster_fixture.h"

namespace qmlx {
namespace {

using test::concat;
using test::FakeSession;
using test::make_tokens;
using test::shared_cluster;

class SharedTierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    QMLX_REQUIRE_REDIS();
    layout_ = test::hybrid_layout();
    // A model of its own per test: tests never see each other's keys.
    fingerprint_ =
        model_fingerprint(std::string("shared tier ") +
                              ::testing::UnitTest::GetInstance()->current_test_info()->name(),
                          layout_);
  }

  CacheConfig config(const test::TempDir& dir, std::vector<std::string> nodes = {}) const {
    CacheConfig c = test::test_config(dir.path());
    c.memory_prefix_cache = true;
    c.shared.enabled = true;
    c.shared.nodes = nodes.empty() ? shared_cluster().nodes() : nodes;
    c.shared.part_mb = 1;
    return c;
  }
  std::unique_ptr<PrefixCache> open(const test::TempDir& dir, const Hash128& fingerprint) {
    return std::make_unique<PrefixCache>(config(dir), fingerprint, layout_);
  }
  std::unique_ptr<PrefixCache> open(const test::TempDir& dir) { return open(dir, fingerprint_); }

  void capture(PrefixCache& cache, const std::vector<int32_t>& tokens) {
    FakeSession session = FakeSession::prefilled(layout_, tokens);
    ASSERT_TRUE(cache.capture(session, tokens, SnapshotKind::kMessageBoundary));
    cache.flush();
  }
  // Restores and checks the installed state byte for byte against a cold prefill.
  RestoreResult restore(PrefixCache& cache, const std::vector<int32_t>& prompt) {
    FakeSession sink(layout_);
    RestoreResult r = cache.restore(prompt, sink);
    if (r.hit) {
      FakeSession expected = FakeSession::prefilled(layout_, test::prefix(prompt, r.cached_tokens));
      if (!r.point.is_snapshot) expected.set_logits({});  // a chunk boundary has no logits
      EXPECT_TRUE(sink.same_state(expected)) << "wrong restore at " << r.cached_tokens;
    } else {
      EXPECT_EQ(sink.position(), 0);
    }
    return r;
  }
  std::string redis_key(PrefixCache& cache, const std::string& name) {
    SharedStoreOptions o;
    o.fingerprint = cache.fingerprint();
    return SharedBlobStore(o).meta_key(name);
  }

  StateLayout layout_;
  Hash128 fingerprint_;
  test::TempDir disk_a_, disk_b_;
};

TEST_F(SharedTierTest, AnotherServerRestoresFromTheSharedTierAndKeepsItOnDisk) {
  const std::vector<int32_t> turn1 = make_tokens(1, 75);
  const std::vector<int32_t> turn2 = concat(turn1, make_tokens(2, 20));
  auto a = open(disk_a_);
  capture(*a, turn1);
  EXPECT_GT(a->stats().shared.blobs_written, 0u);

  auto b = open(disk_b_);  // an empty disk
  RestoreResult r = restore(*b, turn2);
  ASSERT_TRUE(r.hit);
  EXPECT_EQ(r.tier, "shared");
  EXPECT_EQ(r.cached_tokens, 75);
  EXPECT_EQ(b->stats().shared.hits, 1u);
  EXPECT_EQ(b->stats().cached_tokens.at("shared"), 75u);
  b->flush();
  ASSERT_EQ(b->list().size(), 1u);
  EXPECT_TRUE(b->list().front().on_disk);
  // B restarted: the copy it kept on its own disk serves, not the shared tier.
  b.reset();
  b = open(disk_b_);
  r = restore(*b, turn2);
  EXPECT_EQ(r.tier, "disk");
  EXPECT_EQ(b->stats().shared.hits, 0u);
}

// The config's TLS keys reach the client: two servers share a cluster that speaks TLS only.
TEST_F(SharedTierTest, AnotherServerRestoresOverTls) {
  if (std::system("command -v openssl >/dev/null 2>&1") != 0) GTEST_SKIP() << "no openssl";
  auto& tls = test::shared_tls_cluster();
  auto tls_cache = [&](const test::TempDir& dir) {
    CacheConfig c = config(dir, tls.nodes());
    c.shared.tls = true;
    c.shared.tls_ca_file = tls.tls_file("ca.crt");
    c.shared.tls_server_name = "redis.test";
    return std::make_unique<PrefixCache>(c, fingerprint_, layout_);
  };
  const std::vector<int32_t> turn1 = make_tokens(3, 75);
  const std::vector<int32_t> turn2 = concat(turn1, make_tokens(4, 20));
  auto a = tls_cache(disk_a_);
  capture(*a, turn1);
  EXPECT_GT(a->stats().shared.blobs_written, 0u);
  auto b = tls_cache(disk_b_);
  RestoreResult r = restore(*b, turn2);
  ASSERT_TRUE(r.hit);
  EXPECT_EQ(r.tier, "shared");
  EXPECT_EQ(r.cached_tokens, 75);
  EXPECT_TRUE(b->stats().shared.errors.empty());
}

// TLS files that pass the config's checks (they exist) but that OpenSSL cannot load stop the
// start with an error naming the key, instead of failing every call later.
TEST_F(SharedTierTest, TlsFilesThatDoNotLoadFailTheStart) {
  CacheConfig c = config(disk_a_);
  c.shared.tls = true;
  c.shared.tls_ca_file = disk_a_.path() + "/not-a-ca.pem";
  std::ofstream(c.shared.tls_ca_file) << "not a certificate\n";
  try {
    SharedTier tier(c.shared, fingerprint_);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cache.shared: tls_ca_file " + c.shared.tls_ca_file),
              std::string::npos)
        << e.what();
  }
}

TEST_F(SharedTierTest, AnAttentionOnlyChunkBoundaryFromTheSharedTierIsKeptOnDisk) {
  layout_ = test::attention_only_layout();
  fingerprint_ = model_fingerprint("shared tier attention-only", layout_);
  const std::vector<int32_t> turn1 = make_tokens(11, 70);  // 4 full chunks of 16
  // Diverges at 66: the snapshot at 70 does not match, the chunk boundary at 64 does.
  const std::vector<int32_t> turn2 = concat(test::prefix(turn1, 66), make_tokens(12, 30));
  auto a = open(disk_a_);
  capture(*a, turn1);
  auto b = open(disk_b_);  // an empty disk
  RestoreResult r = restore(*b, turn2);
  ASSERT_TRUE(r.hit);
  EXPECT_FALSE(r.point.is_snapshot);
  EXPECT_EQ(r.tier, "shared");
  EXPECT_EQ(r.cached_tokens, 64);
  b->flush();
  // B restarted with the shared tier unreachable: its own disk has the 4 chunks.
  b.reset();
  CacheConfig offline = config(disk_b_, {"127.0.0.1:1"});
  offline.shared.timeout_ms = 50;
  b = std::make_unique<PrefixCache>(offline, fingerprint_, layout_);
  r = restore(*b, turn2);
  ASSERT_TRUE(r.hit);
  EXPECT_EQ(r.tier, "disk");
  EXPECT_EQ(r.cached_tokens, 64);
}

TEST_F(SharedTierTest, IdleRestoresAreNotCountedAsLookupsOrHits) {
  const std::vector<int32_t> turn1 = make_tokens(21, 75);
  auto a = open(disk_a_);
  capture(*a, turn1);
  auto b = open(disk_b_);
  FakeSession sink(layout_);
  RestoreOptions idle;
  idle.quiet = true;  // the idle canonical-history pre-fill restores this way
  ASSERT_TRUE(b->restore(turn1, sink, idle).hit);
  EXPECT_EQ(b->stats().shared.lookups, 0u);
  EXPECT_EQ(b->stats().shared.hits, 0u);
  FakeSession counted(layout_);
  ASSERT_TRUE(b->restore(concat(turn1, {7}), counted).hit);
  EXPECT_EQ(b->stats().shared.lookups, 1u);
}

// The race behind a turn that was never published: a restore reads a chunk from B's disk just
// before the writer lands the copy B adopted from the shared tier. The file was not there when
// read, the index says on disk right after: that is no vanished file, and forgetting it would
// leave the next checkpoint without its chunk (dropped, never published).
TEST_F(SharedTierTest, ARestoreRacingTheAdoptionOfSharedChunksForgetsNothing) {
  const std::vector<int32_t> turn1 = make_tokens(23, 75);
  const std::vector<int32_t> turn2 = concat(turn1, make_tokens(24, 20));
  auto a = open(disk_a_);
  capture(*a, turn1);

  FaultEnv env(Env::posix());
  std::promise<void> release_writer, writer_waits;
  std::shared_future<void> writer_released = release_writer.get_future().share();
  std::future<void> writer_waiting = writer_waits.get_future();
  std::atomic<bool> held = false, raced = false;
  PrefixCache* b_cache = nullptr;
  env.set_open_hook([&](FaultEnv::OpenEvent event, const std::string& path) {
    if (path.find("chunks") == std::string::npos) return;
    if (event == FaultEnv::OpenEvent::kBeforeWrite && !held) {
      held = true;  // the writer waits here until the racing read has missed
      writer_waits.set_value();
      ASSERT_EQ(writer_released.wait_for(std::chrono::seconds(20)), std::future_status::ready);
    } else if (event == FaultEnv::OpenEvent::kReadFailed && held && !raced) {
      raced = true;
      release_writer.set_value();
      b_cache->flush();  // the adopted chunks land between the read and its check
    }
  });
  auto b = std::make_unique<PrefixCache>(config(disk_b_), fingerprint_, layout_, &env);
  b_cache = b.get();
  ASSERT_EQ(restore(*b, turn2).tier, "shared");  // queues the adoption, whose write waits
  // The writer thread may not have reached its first chunk yet (a loaded machine, ASan): the
  // racing read must come while it is held there, not before it started.
  if (writer_waiting.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    release_writer.set_value();
    FAIL() << "the adoption never reached its first chunk write";
  }
  RestoreResult again = restore(*b, turn2);
  ASSERT_TRUE(raced) << "the read never missed while the adoption waited";
  ASSERT_TRUE(again.hit);
  b->flush();
  env.set_open_hook(nullptr);
  EXPECT_EQ(b->stats().disk_errors.count("missing"), 0u) << "a file being written is no fault";
  ASSERT_EQ(b->list().size(), 1u) << "the adopted snapshot was forgotten";
  EXPECT_TRUE(b->list().front().on_disk);
  // The next turn's checkpoint names the adopted chunks: it is written and published.
  const uint64_t published = b->stats().shared.blobs_written;
  capture(*b, turn2);
  EXPECT_GT(b->stats().shared.blobs_written, published);
  EXPECT_EQ(b->stats().checkpoint_dropped.count("missing_chunk"), 0u);
}

TEST_F(SharedTierTest, AFleetStoresEachChunkOnce) {
  const std::vector<int32_t> turn1 = make_tokens(3, 70);  // 4 full chunks of 16
  const std::vector<int32_t> turn2 = concat(turn1, make_tokens(4, 40));
  auto a = open(disk_a_);
  capture(*a, turn1);
  auto b = open(disk_b_);
  ASSERT_TRUE(restore(*b, turn2).hit);
  capture(*b, turn2);
  // B's turn-2 checkpoint names 6 chunks; the 4 of turn 1 were in the tier already.
  EXPECT_EQ(b->stats().shared.chunks_skipped, 4u);
}

TEST_F(SharedTierTest, CorruptValueIsDetectedDeletedAndCounted) {
  const std::vector<int32_t> turn = make_tokens(5, 60);
  auto a = open(disk_a_);
  capture(*a, turn);
  const Hash128 id = a->list().front().id;
  const std::string key = redis_key(*a, DiskStore::snapshot_name(id));
  const std::string meta = shared_cluster().cli(0, "get '" + key + "'");
  const std::string part = key + ":" + meta.substr(meta.find(' ') + 1, 16) + ":0";
  shared_cluster().cli(0, "setrange '" + part + "' 300 XXXX");

  auto b = open(disk_b_);
  RestoreResult r = restore(*b, concat(turn, make_tokens(6, 5)));
  EXPECT_FALSE(r.hit);
  ASSERT_EQ(r.rejected.size(), 1u);
  EXPECT_EQ(r.rejected[0].reason, RejectReason::kChecksum);
  EXPECT_EQ(b->stats().shared.corrupt_deleted, 1u);
  EXPECT_EQ(b->stats().restore_rejected.at("checksum"), 1u);
  EXPECT_EQ(shared_cluster().cli(0, "exists '" + key + "'"), "0\n");
  // Its stale index entry went with it: the next lookup has no candidate at all.
  EXPECT_EQ(restore(*b, concat(turn, make_tokens(6, 5))).miss_reason, "no_candidate");
}

TEST_F(SharedTierTest, SnapshotWithAChunkGoneIsAPartialMiss) {
  const std::vector<int32_t> turn = make_tokens(7, 50);
  auto a = open(disk_a_);
  capture(*a, turn);
  // What maxmemory eviction does: one chunk of the snapshot vanishes.
  const std::vector<Hash128> chain = chain_hashes(fingerprint_, turn, test::kChunkTokens);
  shared_cluster().cli(0, "del '" + redis_key(*a, DiskStore::chunk_name(chain[2])) + "'");
  auto b = open(disk_b_);
  RestoreResult r = restore(*b, concat(turn, make_tokens(8, 5)));
  EXPECT_FALSE(r.hit);
  EXPECT_EQ(r.miss_reason, "partial");
  EXPECT_EQ(b->stats().restore_rejected.at("partial"), 1u);
  EXPECT_EQ(b->stats().shared.corrupt_deleted, 0u);
}

TEST_F(SharedTierTest, AnotherModelNeverRestores) {
  const std::vector<int32_t> turn = make_tokens(9, 40);
  auto a = open(disk_a_);
  capture(*a, turn);
  auto other = open(disk_b_, model_fingerprint("another model", layout_));
  RestoreResult r = restore(*other, concat(turn, make_tokens(10, 5)));
  EXPECT_FALSE(r.hit);
  EXPECT_EQ(r.miss_reason, "no_candidate");
}

TEST_F(SharedTierTest, PinsReachTheSharedTier) {
  const std::vector<int32_t> turn = make_tokens(11, 40);
  auto a = open(disk_a_);
  capture(*a, turn);
  const Hash128 id = a->list().front().id;
  const std::string key = "'" + redis_key(*a, DiskStore::snapshot_name(id)) + "'";
  EXPECT_GT(std::stol(shared_cluster().cli(0, "pttl " + key)), 0);
  ASSERT_TRUE(a->pin(id, true).ok());
  EXPECT_EQ(shared_cluster().cli(0, "pttl " + key), "-1\n");
  const Hash128 chunk = chain_hashes(fingerprint_, turn, test::kChunkTokens)[1];
  EXPECT_EQ(shared_cluster().cli(0, "pttl '" + redis_key(*a, DiskStore::chunk_name(chunk)) + "'"),
            "-1\n");
  ASSERT_TRUE(a->pin(id, false).ok());
  EXPECT_GT(std::stol(shared_cluster().cli(0, "pttl " + key)), 0);
}

TEST_F(SharedTierTest, PinsFromTheCommandLineReachTheSharedTier) {
  const std::vector<int32_t> turn = make_tokens(13, 40);
  auto a = open(disk_a_);
  capture(*a, turn);
  const Hash128 id = a->list().front().id;
  const std::string key = "'" + redis_key(*a, DiskStore::snapshot_name(id)) + "'";
  a.reset();  // the server stopped; `qmlx cache pin` works on its folder
  CacheAdmin admin(config(disk_a_));
  std::string error;
  const std::optional<SnapshotRef> ref = admin.find(id.hex(), &error);
  ASSERT_TRUE(ref) << error;
  EXPECT_GT(std::stol(shared_cluster().cli(0, "pttl " + key)), 0);
  ASSERT_TRUE(admin.pin(*ref, true).ok());
  EXPECT_EQ(shared_cluster().cli(0, "pttl " + key), "-1\n");
  ASSERT_TRUE(admin.pin(*ref, false).ok());
  EXPECT_GT(std::stol(shared_cluster().cli(0, "pttl " + key)), 0);
  // An unreachable tier: pinned on disk, and the error says the shared tier was not reached.
  CacheConfig offline = config(disk_a_, {"127.0.0.1:1"});
  offline.shared.timeout_ms = 50;
  CacheAdmin cut_off(offline);
  const Status s = cut_off.pin(*cut_off.find(id.hex(), &error), true);
  EXPECT_NE(s.message().find("not in the shared tier"), std::string::npos) << s.ToString();
  EXPECT_TRUE(CacheAdmin(offline).inspect(*CacheAdmin(offline).find(id.hex(), &error))->pinned);
}

TEST_F(SharedTierTest, UnreachableClusterCostsABoundedTimeAndLocalTiersStillWork) {
  CacheConfig c = config(disk_a_, {"127.0.0.1:1"});
  c.shared.timeout_ms = 100;
  auto a = std::make_unique<PrefixCache>(c, fingerprint_, layout_);
  const std::vector<int32_t> turn = make_tokens(12, 40);
  capture(*a, turn);  // published nowhere, kept locally
  const auto start = std::chrono::steady_clock::now();
  RestoreResult r = restore(*a, concat(turn, make_tokens(13, 5)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
  ASSERT_TRUE(r.hit);
  EXPECT_NE(r.tier, "shared");
  EXPECT_GT(a->stats().shared.errors.at("io"), 0u);
  EXPECT_EQ(a->stats().checkpoint_dropped.at("shared"), 1u);
}

}  // namespace
}  // namespace qmlx
