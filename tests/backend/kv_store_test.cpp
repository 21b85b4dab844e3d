// Appending K/V rows on the device against kernels/kv_row.h's store_kv_head, for every KvType:
// the cache bytes must be identical (f32, f16 and bf16 are integer arithmetic on the device;
// int8's one division is correctly rounded on lavapipe, so it is exact there too). Values span
// normal numbers, f16 subnormals and overflow, exact halfway cases of both 16-bit formats, and
// a head row of zeros (int8's zero scale); rows land at an offset inside a larger cache and
// the rows around them stay untouched.
#include "backend/vulkan/kv_store.h"

#include <cmath>

#include "vulkan_fixture.h"

namespace qmlx::vulkan::testing {
namespace {

using KvStoreTest = VulkanTest;

std::vector<float> tricky_values(size_t n, uint64_t seed) {
  std::vector<float> v = random_floats(n, seed, -4.f, 4.f);
  const float specials[] = {0.f,     -0.f,    65504.f, 65520.f, 70000.f, -1e6f,   6e-8f,
                            3e-8f,   -2.98e-8f, 1e-5f, 6.1e-5f, 1.f + 1.f / 2048.f,
                            1.f + 3.f / 2048.f, 1.f + 1.f / 256.f, 1.f + 3.f / 256.f, 1e-40f};
  for (size_t i = 0; i < n && i < std::size(specials); ++i) v[i * 7 % n] = specials[i];
  for (size_t i = 0; i < n; i += 5) v[i] *= std::ldexp(1.f, int(i % 23) - 11);
  return v;
}

TEST_F(KvStoreTest, RowsMatchTheCpusBytes) {
  const int heads = 3, D = 64, rows = 5, first_row = 2, cache_rows = 9;
  for (KvType type : {KvType::kF32, KvType::kF16, KvType::kBF16, KvType::kInt8}) {
    SCOPED_TRACE("kv type " + std::to_string(int(type)));
    std::vector<float> x = tricky_values(size_t(rows) * heads * D, 7 + int(type));
    // One head row of zeros: int8's scale is 0 and every code 0.
    std::fill_n(x.begin() + D, D, 0.f);
    const size_t head_bytes = kv_head_bytes(type, D), row_bytes = heads * head_bytes;
    std::vector<uint8_t> expected(cache_rows * row_bytes, 0xab);
    for (int r = 0; r < rows; ++r)
      for (int h = 0; h < heads; ++h)
        store_kv_head(x.data() + (size_t(r) * heads + h) * D, D, type,
                      expected.data() + (first_row + r) * row_bytes + h * head_bytes);
    // The floats sit after a leading row, as a sequence's rows sit inside a batch.
    std::vector<float> src(size_t(D) * heads, 9.f);
    src.insert(src.end(), x.begin(), x.end());
    Buffer in = upload(src);
    Buffer cache = context().create_buffer(expected.size());
    std::vector<uint8_t> filler(expected.size(), 0xab);
    context().upload(cache, 0, filler.data(), filler.size());
    CommandRecorder recorder(context());
    record_kv_store(recorder, in, size_t(D) * heads, rows, heads, D, type, cache, first_row);
    recorder.submit_and_wait();
    std::vector<uint8_t> got(expected.size());
    context().download(cache, 0, got.data(), got.size());
    size_t differing = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      if (got[i] != expected[i] && differing < 4)
        ADD_FAILURE() << "byte " << i << ": " << int(got[i]) << " vs " << int(expected[i]);
      differing += got[i] != expected[i];
    }
    if (type == KvType::kInt8 && !exact_device()) {
      // A division that is not correctly rounded may move a code by one.
      EXPECT_LE(differing, got.size() / 50);
    } else {
      EXPECT_EQ(differing, 0u);
    }
  }
}

}  // namespace
}  // namespace qmlx::vulkan::testing
