#include "cache/shared_blob_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <random>

#include "redis_cluster_fixture.h"

namespace qmlx {
namespace {

using test::random_bytes;
using test::shared_cluster;

SharedStoreOptions options_for(const std::vector<std::string>& nodes, uint64_t model) {
  SharedStoreOptions o;
  o.cluster = test::options_for_seeds(nodes, 1000);
  o.fingerprint = Hash128{model, ~model};
  o.part_bytes = 1000;  // small parts: a few KB already spans several
  o.ttl_seconds = 3600;
  return o;
}

class SharedBlobStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    QMLX_REQUIRE_REDIS();
    store_ =
        std::make_unique<SharedBlobStore>(options_for(shared_cluster().nodes(), next_model_++));
  }
  std::unique_ptr<SharedBlobStore> store_;
  static inline uint64_t next_model_ = 1000;
};

TEST_F(SharedBlobStoreTest, MultiPartBlobRoundTrips) {
  const std::vector<uint8_t> blob = random_bytes(10'500, 1);  // 11 parts, the last one short
  ASSERT_TRUE(store_->put("chunks/ab/one.kv", blob).ok());
  std::vector<uint8_t> back;
  ASSERT_TRUE(store_->get("chunks/ab/one.kv", &back).ok());
  EXPECT_EQ(back, blob);
  uint64_t size = 0;
  ASSERT_TRUE(store_->size("chunks/ab/one.kv", &size).ok());
  EXPECT_EQ(size, blob.size());
  // A range across three parts.
  std::vector<uint8_t> range(2500);
  ASSERT_TRUE(store_->read_range("chunks/ab/one.kv", 1700, range.size(), range.data()).ok());
  EXPECT_TRUE(std::equal(range.begin(), range.end(), blob.begin() + 1700));
  // An empty blob is a blob too.
  ASSERT_TRUE(store_->put("snapshots/empty.snap", {}).ok());
  ASSERT_TRUE(store_->get("snapshots/empty.snap", &back).ok());
  EXPECT_TRUE(back.empty());
  EXPECT_EQ(store_->stats().bytes_written, blob.size());
}

TEST_F(SharedBlobStoreTest, OverwriteReplacesEveryPartAndDropsTheOldOnes) {
  ASSERT_TRUE(store_->put("snapshots/x.snap", random_bytes(5000, 2)).ok());
  const std::vector<uint8_t> second = random_bytes(2100, 3);
  ASSERT_TRUE(store_->put("snapshots/x.snap", second).ok());
  std::vector<uint8_t> back;
  ASSERT_TRUE(store_->get("snapshots/x.snap", &back).ok());
  EXPECT_EQ(back, second);
  // Only the meta and the 3 parts of the new generation remain.
  const std::string pattern = "'" + store_->meta_key("snapshots/x.snap") + "*'";
  size_t keys = 0;
  for (int node = 0; node < 3; ++node) {
    const std::string out = shared_cluster().cli(node, "--scan --pattern " + pattern);
    keys += size_t(std::count(out.begin(), out.end(), '\n'));
  }
  EXPECT_EQ(keys, 4u);
}

TEST_F(SharedBlobStoreTest, MissingPartIsAPartialNotFound) {
  const std::vector<uint8_t> blob = random_bytes(4000, 4);
  ASSERT_TRUE(store_->put("chunks/cd/two.kv", blob).ok());
  // What maxmemory eviction does: one part vanishes.
  const std::string meta =
      shared_cluster().cli(0, "get '" + store_->meta_key("chunks/cd/two.kv") + "'");
  const std::string generation = meta.substr(meta.find(' ') + 1, 16);
  shared_cluster().cli(0, "del '" + store_->part_key("chunks/cd/two.kv", generation, 2) + "'");
  std::vector<uint8_t> back;
  Status s = store_->get("chunks/cd/two.kv", &back);
  EXPECT_EQ(s.code(), Status::Code::kNotFound) << s.ToString();
  EXPECT_NE(s.message().find("partial"), std::string::npos) << s.ToString();
  EXPECT_EQ(store_->get("chunks/cd/never.kv", &back).code(), Status::Code::kNotFound);
}

TEST_F(SharedBlobStoreTest, ListExistsRemoveAndQuarantine) {
  ASSERT_TRUE(store_->put("chunks/aa/1.kv", random_bytes(1500, 5)).ok());
  ASSERT_TRUE(store_->put("chunks/bb/2.kv", random_bytes(10, 6)).ok());
  ASSERT_TRUE(store_->put("snapshots/3.snap", random_bytes(20, 7)).ok());
  std::vector<BlobInfo> listed;
  ASSERT_TRUE(store_->list("chunks", &listed).ok());
  std::sort(listed.begin(), listed.end(),
            [](const BlobInfo& a, const BlobInfo& b) { return a.name < b.name; });
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].name, "chunks/aa/1.kv");
  EXPECT_EQ(listed[0].bytes, 1500u);
  std::vector<bool> present;
  ASSERT_TRUE(
      store_->exists_many({"chunks/aa/1.kv", "chunks/zz/0.kv", "snapshots/3.snap"}, &present).ok());
  EXPECT_EQ(present, (std::vector<bool>{true, false, true}));
  ASSERT_TRUE(store_->remove("chunks/aa/1.kv").ok());
  EXPECT_FALSE(store_->exists("chunks/aa/1.kv"));
  ASSERT_TRUE(store_->quarantine("chunks/bb/2.kv").ok());
  EXPECT_FALSE(store_->exists("chunks/bb/2.kv"));
  EXPECT_EQ(store_->stats().corrupt_deleted, 1u);
}

TEST_F(SharedBlobStoreTest, FingerprintsNeverSeeEachOthersBlobs) {
  SharedBlobStore other(options_for(shared_cluster().nodes(), 1));
  ASSERT_TRUE(store_->put("snapshots/same.snap", random_bytes(100, 8)).ok());
  EXPECT_FALSE(other.exists("snapshots/same.snap"));
  std::vector<BlobInfo> listed;
  ASSERT_TRUE(other.list("snapshots", &listed).ok());
  for (const BlobInfo& b : listed) EXPECT_NE(b.name, "snapshots/same.snap");
}

TEST_F(SharedBlobStoreTest, TtlIsSetAndPinningRemovesIt) {
  ASSERT_TRUE(store_->put("snapshots/pin.snap", random_bytes(2500, 9)).ok());
  const std::string key = "'" + store_->meta_key("snapshots/pin.snap") + "'";
  const int ttl = std::stoi(shared_cluster().cli(0, "pttl " + key));
  EXPECT_GT(ttl, 3'000'000);
  EXPECT_LE(ttl, 3'600'000);
  ASSERT_TRUE(store_->set_persistent("snapshots/pin.snap", true).ok());
  EXPECT_EQ(std::stoi(shared_cluster().cli(0, "pttl " + key)), -1);
  ASSERT_TRUE(store_->set_persistent("snapshots/pin.snap", false).ok());
  EXPECT_GT(std::stoi(shared_cluster().cli(0, "pttl " + key)), 3'000'000);
}

TEST_F(SharedBlobStoreTest, IndexHashesReadInOneBatch) {
  ASSERT_TRUE(store_->index_add("index/a", "s1", "100").ok());
  ASSERT_TRUE(store_->index_add("index/a", "s2", "200").ok());
  ASSERT_TRUE(store_->index_add("index/c", "s3", "300").ok());
  std::vector<SharedIndexEntries> entries;
  ASSERT_TRUE(store_->index_read_many({"index/a", "index/b", "index/c"}, &entries).ok());
  ASSERT_EQ(entries.size(), 3u);
  std::sort(entries[0].begin(), entries[0].end());
  EXPECT_EQ(entries[0], (SharedIndexEntries{{"s1", "100"}, {"s2", "200"}}));
  EXPECT_TRUE(entries[1].empty());
  EXPECT_EQ(entries[2], (SharedIndexEntries{{"s3", "300"}}));
  ASSERT_TRUE(store_->index_remove("index/a", "s1").ok());
  ASSERT_TRUE(store_->index_read_many({"index/a"}, &entries).ok());
  EXPECT_EQ(entries[0], (SharedIndexEntries{{"s2", "200"}}));
}

TEST(SharedBlobStoreFaultTest, DeadNodeCostsATimeoutThenTheBreakerFailsFast) {
  QMLX_REQUIRE_REDIS();
  test::LocalRedisCluster cluster;
  SharedStoreOptions o = options_for(cluster.nodes(), 7);
  o.cluster.breaker_failures = 3;
  o.cluster.breaker_cooldown_ms = 60'000;
  SharedBlobStore store(o);
  // Names on every node, so some live on the node about to die.
  std::vector<std::string> names;
  for (int i = 0; i < 30; ++i) names.push_back("chunks/00/" + std::to_string(i) + ".kv");
  for (const std::string& name : names) ASSERT_TRUE(store.put(name, random_bytes(300, 1)).ok());
  cluster.kill(1);
  int failed = 0;
  for (const std::string& name : names) {
    std::vector<uint8_t> back;
    const auto start = std::chrono::steady_clock::now();
    Status s = store.get(name, &back);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1500)) << name;
    if (!s.ok()) ++failed;
  }
  EXPECT_GT(failed, 0);
  SharedTierStats stats = store.stats();
  EXPECT_TRUE(stats.breaker_open);
  EXPECT_EQ(stats.breaker_opens, 1u);
  EXPECT_GT(stats.errors["breaker_open"], 0u);
  // While open, nothing is attempted on the dead node: its calls return at once, and the
  // names on the live nodes still read.
  int still_read = 0;
  for (const std::string& name : names) {
    std::vector<uint8_t> back;
    const auto start = std::chrono::steady_clock::now();
    if (store.get(name, &back).ok()) ++still_read;
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(20)) << name;
  }
  EXPECT_EQ(still_read, int(names.size()) - failed);
}

// The store over TLS, against the TLS-only cluster (its throwaway CA).
TEST(SharedBlobStoreTlsTest, MultiPartBlobsRoundTripOverTls) {
  QMLX_REQUIRE_REDIS_TLS();
  SharedStoreOptions o;
  o.cluster = test::shared_tls_cluster().client_options();
  o.fingerprint = Hash128{77, 88};
  o.part_bytes = 256 << 10;
  o.ttl_seconds = 3600;
  SharedBlobStore store(o);
  ASSERT_TRUE(store.setup_status().ok()) << store.setup_status().ToString();
  // 12 parts, the last one short: every part crosses many TLS records.
  const std::vector<uint8_t> blob = random_bytes(3'000'000, 11);
  Status s = store.put("snapshots/tls.snap", blob);
  ASSERT_TRUE(s.ok()) << s.ToString();
  std::vector<uint8_t> back;
  s = store.get("snapshots/tls.snap", &back);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(back, blob);
  std::vector<uint8_t> range(600'000);
  ASSERT_TRUE(store.read_range("snapshots/tls.snap", 200'000, range.size(), range.data()).ok());
  EXPECT_TRUE(std::equal(range.begin(), range.end(), blob.begin() + 200'000));
  // Nested replies over TLS: SCAN pages (list) and HGETALL (the index).
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(store
                    .put("chunks/0" + std::to_string(i % 10) + "/" + std::to_string(i) + ".kv",
                         random_bytes(100 + i, uint32_t(i)))
                    .ok());
  }
  std::vector<BlobInfo> listed;
  ASSERT_TRUE(store.list("chunks", &listed).ok());
  EXPECT_EQ(listed.size(), 20u);
  ASSERT_TRUE(store.index_add("index/t", "a", "1").ok());
  ASSERT_TRUE(store.index_add("index/t", "b", "2").ok());
  std::vector<SharedIndexEntries> entries;
  ASSERT_TRUE(store.index_read_many({"index/t", "index/none"}, &entries).ok());
  std::sort(entries[0].begin(), entries[0].end());
  EXPECT_EQ(entries[0], (SharedIndexEntries{{"a", "1"}, {"b", "2"}}));
  EXPECT_TRUE(entries[1].empty());
  EXPECT_EQ(store.stats().errors.size(), 0u);
}

}  // namespace
}  // namespace qmlx
