// The K/V storage dtype and the cache (issue 16): the dtype is part of the fingerprint, so a
// cache of one dtype never restores a checkpoint of another, even with the other's files in its
// folder; int8 rows are stored and restored as they are, in about half of bf16's bytes.
#include <gtest/gtest.h>

#include <filesystem>

#include "cache_fixture.h"

namespace qmlx {
namespace {

using test::FakeSession;
using test::make_tokens;

// The 0.8B shape's K/V rows (2 heads x 256), with recurrent layers as in hybrid models.
StateLayout layout_with(DType kv_dtype) {
  StateLayout l = test::hybrid_layout();
  l.head_dim = 256;
  l.kv_dtype = kv_dtype;
  return l;
}

class KvDtypeCache : public ::testing::Test {
 protected:
  std::unique_ptr<PrefixCache> open(DType dtype) {
    StateLayout l = layout_with(dtype);
    return std::make_unique<PrefixCache>(config_, model_fingerprint("test model", l), l);
  }
  void capture(PrefixCache& cache, DType dtype, const std::vector<int32_t>& tokens) {
    FakeSession session = FakeSession::prefilled(layout_with(dtype), tokens);
    ASSERT_TRUE(cache.capture(session, tokens, SnapshotKind::kMessageBoundary));
    cache.flush();
  }
  RestoreResult restore(PrefixCache& cache, DType dtype, const std::vector<int32_t>& prompt) {
    FakeSession sink(layout_with(dtype));
    RestoreResult r = cache.restore(prompt, sink);
    if (r.hit) {
      EXPECT_TRUE(sink.same_state(FakeSession::prefilled(
          layout_with(dtype), test::prefix(prompt, size_t(r.cached_tokens)))));
    }
    return r;
  }

  test::TempDir dir_;
  CacheConfig config_ = test::test_config(dir_.path());
};

TEST_F(KvDtypeCache, NeverRestoresAnotherDtypesCheckpoint) {
  const std::vector<int32_t> turn = make_tokens(21, 70);
  for (auto [stored, wanted] :
       {std::pair{DType::kBF16, DType::kInt8}, std::pair{DType::kInt8, DType::kBF16}}) {
    SCOPED_TRACE(std::string(dtype_name(stored)) + " checkpoint, " + dtype_name(wanted) +
                 " server");
    std::filesystem::remove_all(dir_.path());
    std::string stored_dir;
    {
      auto cache = open(stored);
      capture(*cache, stored, turn);
      stored_dir = cache->store_dir();
      EXPECT_TRUE(restore(*cache, stored, turn).hit);  // its own dtype restores
    }
    auto other = open(wanted);
    EXPECT_NE(other->store_dir(), stored_dir);
    EXPECT_FALSE(restore(*other, wanted, turn).hit);
    other.reset();
    // Even the other dtype's files copied into its folder are not restored: the headers carry
    // the fingerprint (and the row size), and both are checked.
    auto wanted_dir = open(wanted)->store_dir();
    std::filesystem::copy(stored_dir, wanted_dir,
                          std::filesystem::copy_options::recursive |
                              std::filesystem::copy_options::overwrite_existing);
    auto reopened = open(wanted);
    EXPECT_FALSE(restore(*reopened, wanted, turn).hit);
    EXPECT_TRUE(reopened->list().empty());
  }
}

TEST_F(KvDtypeCache, Int8RowsAreStoredAsTheyAreInAboutHalfTheBytes) {
  const std::vector<int32_t> turn = make_tokens(22, 64);  // 4 full chunks
  uint64_t chunk_bytes[2] = {0, 0};
  int i = 0;
  for (DType dtype : {DType::kBF16, DType::kInt8}) {
    auto cache = open(dtype);
    capture(*cache, dtype, turn);
    RestoreResult r = restore(*cache, dtype, turn);  // checks the rows byte for byte
    EXPECT_TRUE(r.hit);
    EXPECT_EQ(r.cached_tokens, 64);
    for (const auto& e : std::filesystem::recursive_directory_iterator(cache->store_dir()))
      if (e.path().extension() == ".kv") chunk_bytes[i] += e.file_size();
    ++i;
  }
  const StateLayout bf16 = layout_with(DType::kBF16), int8 = layout_with(DType::kInt8);
  EXPECT_EQ(int8.kv_row_bytes(), 2u * (256 + 4));
  EXPECT_EQ(bf16.kv_row_bytes(), 2u * 256 * 2);
  ASSERT_GT(chunk_bytes[0], 0u);
  const double ratio = double(chunk_bytes[1]) / double(chunk_bytes[0]);
  EXPECT_GT(ratio, 0.5);
  EXPECT_LT(ratio, 0.52);  // 260 / 512 per head row, plus the chunk headers
}

}  // namespace
}  // namespace qmlx
