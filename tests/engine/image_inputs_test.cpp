// What the engine keeps of images: the pad keys the cache sees in their place, and the encoder
// outputs it keeps so an image is encoded once per conversation.
#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "engine/image_embedding_cache.h"
#include "engine/image_pad_keys.h"

namespace qmlx {
namespace {

std::vector<int32_t> keys(uint64_t low, uint64_t high, size_t n) {
  std::vector<int32_t> out(n);
  write_image_pad_keys(low, high, out);
  return out;
}

TEST(ImagePadKeys, NegativeDistinctPerPadAndPerImageAndStable) {
  const std::vector<int32_t> a = keys(1, 2, 1000);
  for (int32_t k : a) EXPECT_TRUE(is_image_pad_key(k));
  EXPECT_EQ(std::set<int32_t>(a.begin(), a.end()).size(), a.size());  // pads tell apart
  EXPECT_EQ(a, keys(1, 2, 1000));                                     // same image, same keys
  const std::vector<int32_t> b = keys(1, 3, 1000);                    // one bit of identity
  size_t same = 0;
  for (size_t i = 0; i < a.size(); ++i) same += a[i] == b[i];
  EXPECT_EQ(same, 0u);
  // A prefix of an image's pads is the prefix of its keys (a restore cut inside an image).
  EXPECT_EQ(keys(1, 2, 10), std::vector<int32_t>(a.begin(), a.begin() + 10));
}

TEST(ImagePadKeys, MappedBackToThePadTokenOnlyWhereKeysAre) {
  std::vector<int32_t> tokens = {5, 6, 7};
  std::vector<int32_t> mapped;
  EXPECT_FALSE(map_image_pad_keys(tokens, 99, &mapped));
  EXPECT_TRUE(mapped.empty());
  std::vector<int32_t> pads = keys(7, 7, 3);
  tokens.insert(tokens.begin() + 1, pads.begin(), pads.end());
  ASSERT_TRUE(map_image_pad_keys(tokens, 99, &mapped));
  EXPECT_EQ(mapped, (std::vector<int32_t>{5, 99, 99, 99, 6, 7}));
}

TEST(ImageEmbeddingCache, EncodesOnceAndEvictsLeastRecentlyUsedByBytes) {
  ImageEmbeddingCache cache(3 * 100 * sizeof(float));  // room for three images of 100 floats
  int encoded = 0;
  auto encode = [&](float value) {
    return [&encoded, value] {
      ++encoded;
      return std::vector<float>(100, value);
    };
  };
  bool hit = true;
  EXPECT_EQ(cache.get_or_encode({1, 0}, encode(1), &hit)->at(0), 1.f);
  EXPECT_FALSE(hit);
  EXPECT_EQ(cache.get_or_encode({1, 0}, encode(9), &hit)->at(0), 1.f);
  EXPECT_TRUE(hit);
  EXPECT_EQ(encoded, 1);
  cache.get_or_encode({2, 0}, encode(2));
  cache.get_or_encode({3, 0}, encode(3));
  cache.get_or_encode({1, 0}, encode(1));  // 1 is now the most recent
  cache.get_or_encode({4, 0}, encode(4));  // evicts 2, the least recently used
  EXPECT_EQ(cache.images(), 3u);
  EXPECT_EQ(cache.bytes(), 3 * 100 * sizeof(float));
  encoded = 0;
  cache.get_or_encode({1, 0}, encode(1), &hit);
  EXPECT_TRUE(hit);
  cache.get_or_encode({2, 0}, encode(2), &hit);
  EXPECT_FALSE(hit);
  EXPECT_EQ(encoded, 1);
  // Rows bigger than the whole cache are returned, not kept.
  ImageEmbeddingCache tiny(10);
  EXPECT_EQ(tiny.get_or_encode({5, 0}, encode(5))->size(), 100u);
  EXPECT_EQ(tiny.images(), 0u);
}

TEST(ImageEmbeddingCache, ConcurrentRequestsGetTheSameRows) {
  ImageEmbeddingCache cache(1 << 20);
  std::vector<std::thread> threads;
  std::vector<float> first(8, 0.f);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      first[size_t(t)] = cache
                             .get_or_encode({uint64_t(t % 2), 0},
                                            [t] { return std::vector<float>(16, float(t % 2)); })
                             ->at(0);
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < 8; ++t) EXPECT_EQ(first[size_t(t)], float(t % 2));
  EXPECT_EQ(cache.images(), 2u);
}

}  // namespace
}  // namespace qmlx
