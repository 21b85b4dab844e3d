#include "cache/admin.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cache_fixture.h"

namespace qmlx {
namespace {

using test::make_tokens;

class Admin : public test::CacheTest {
 protected:
  // Two models' stores: three snapshots of this model, one of another.
  void SetUp() override {
    {
      auto cache = open();
      capture(*cache, make_tokens(81, 40), SnapshotKind::kMessageBoundary);
      capture(*cache, make_tokens(82, 40), SnapshotKind::kInterval);
      capture(*cache, make_tokens(83, 20), SnapshotKind::kPromptEnd);
      store_ = cache->store_dir();
    }
    PrefixCache other(config_, model_fingerprint("other", layout_), layout_);
    FakeSessionCapture(other, make_tokens(84, 40));
  }
  void FakeSessionCapture(PrefixCache& cache, const std::vector<int32_t>& tokens) {
    capture(cache, tokens, SnapshotKind::kMessageBoundary);
  }
  std::string store_;
};

TEST_F(Admin, ListsEveryStoreWithoutTheModel) {
  CacheAdmin admin(config_);
  EXPECT_EQ(admin.list().size(), 4u);
  std::vector<StoreSummary> stores = admin.stores();
  ASSERT_EQ(stores.size(), 2u);
  size_t snapshots = stores[0].snapshots + stores[1].snapshots;
  EXPECT_EQ(snapshots, 4u);
  for (const VerifyReport& r : admin.verify_all()) EXPECT_TRUE(r.ok) << r.detail;
}

TEST_F(Admin, FindsByUniquePrefixPinsAndRemoves) {
  CacheAdmin admin(config_);
  const Hash128 id = admin.list().at(0).id;
  std::string error;
  std::optional<SnapshotRef> ref = admin.find(id.hex().substr(0, 12), &error);
  ASSERT_TRUE(ref) << error;
  EXPECT_EQ(ref->id, id);
  EXPECT_FALSE(admin.find("ab", &error));
  EXPECT_NE(error.find("too short"), std::string::npos);
  EXPECT_FALSE(admin.find("ffffffffffff", &error) && error.empty());
  ASSERT_TRUE(admin.pin(*ref, true).ok());
  EXPECT_TRUE(CacheAdmin(config_).inspect(*CacheAdmin(config_).find(id.hex(), &error))->pinned);
  ASSERT_TRUE(admin.remove(*ref).ok());
  EXPECT_EQ(CacheAdmin(config_).list().size(), 3u);
}

TEST_F(Admin, VerifyQuarantinesCorruptFilesAndGcCollectsThem) {
  std::string chunk;
  for (const auto& e : std::filesystem::recursive_directory_iterator(store_ + "/chunks")) {
    if (e.is_regular_file()) chunk = e.path();
  }
  {
    std::fstream f(chunk, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(200);
    f.put('\x7f');
  }
  CacheAdmin admin(config_);
  int failed = 0;
  for (const VerifyReport& r : admin.verify_all()) {
    if (r.ok) continue;
    ++failed;
    EXPECT_EQ(r.reason, RejectReason::kChecksum);
  }
  EXPECT_EQ(failed, 1);
  EXPECT_FALSE(std::filesystem::exists(chunk));
  uint64_t quarantined = 0;
  for (const StoreSummary& s : admin.stores()) quarantined += s.quarantine_bytes;
  EXPECT_GT(quarantined, 0u);
  EXPECT_GE(admin.gc(), quarantined);
  for (const StoreSummary& s : CacheAdmin(config_).stores()) EXPECT_EQ(s.quarantine_bytes, 0u);
}

TEST_F(Admin, GcEvictsDownToTheCapAndClearRemovesEverything) {
  config_.disk_cache_max_gb = 1e-9;  // about one byte: everything unpinned goes
  CacheAdmin admin(config_);
  EXPECT_GT(admin.gc(), 0u);
  EXPECT_TRUE(CacheAdmin(config_).list().empty());
  ASSERT_TRUE(CacheAdmin(config_).clear().ok());
  EXPECT_TRUE(std::filesystem::is_empty(config_.disk_cache_dir));
}

}  // namespace
}  // namespace qmlx
