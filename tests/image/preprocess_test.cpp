// preprocess_for_vision against the processor's own steps in numpy (rescale, normalise, the
// reshape and permute that order the patches), bit for bit; and what the identity covers.
#include <cstring>

#include "image/image_decode.h"
#include "image/vision_preprocess.h"
#include "tests/image/fixtures.h"

namespace qmlx::image {
namespace {

using testing::fixture_bytes;
using testing::fixture_image;
using testing::manifest;

TEST(VisionPreprocess, PixelValuesAndGridEqualTheProcessors) {
  ASSERT_GE(manifest()["preprocess"].size(), 3u);
  for (const auto& c : manifest()["preprocess"]) {
    const std::string name = c["name"];
    SCOPED_TRACE(name);
    VisionPreprocessConfig config;
    config.min_pixels = c["min_pixels"];
    config.max_pixels = c["max_pixels"];
    for (int i = 0; i < 3; ++i) {
      config.mean[size_t(i)] = float(double(c["mean"][i]));
      config.std[size_t(i)] = float(double(c["std"][i]));
    }
    const VisionInput input =
        preprocess_for_vision(fixture_image(name + ".src", c["src"][1], c["src"][0]), config);
    EXPECT_EQ(input.grid, (GridThw{c["grid"][0], c["grid"][1], c["grid"][2]}));
    EXPECT_EQ(input.patch_dim, 3 * 2 * 16 * 16);
    ASSERT_EQ(input.num_patches, input.grid.t * input.grid.h * input.grid.w);
    const std::vector<uint8_t> expected = fixture_bytes(name + ".out");
    ASSERT_EQ(expected.size(), input.pixel_values.size() * sizeof(float));
    EXPECT_EQ(std::memcmp(expected.data(), input.pixel_values.data(), expected.size()), 0)
        << "pixel_values differ from the processor's (bitwise)";
  }
}

TEST(VisionPreprocess, TheTwoTemporalCopiesAreTheSameImage) {
  const VisionInput input = preprocess_for_vision(fixture_image("preprocess0.src", 100, 70),
                                                  {.min_pixels = 4096, .max_pixels = 12288});
  const size_t plane = 16 * 16;  // one channel of one temporal copy of a patch
  for (int patch = 0; patch < input.num_patches; ++patch) {
    const float* row = input.pixel_values.data() + size_t(patch) * size_t(input.patch_dim);
    for (int c = 0; c < 3; ++c) {
      ASSERT_EQ(std::memcmp(row + (2 * c) * plane, row + (2 * c + 1) * plane, plane * 4), 0);
    }
  }
}

TEST(ImageIdentity, SamePixelsSameIdentityWhateverTheEncoding) {
  // rgb.png and lossless re-encodings decode to the same pixels: one image to the cache.
  const RgbImage png = decode_image(fixture_bytes("rgb.png"));
  const RgbImage same = png;
  EXPECT_EQ(image_identity(png, {32, 64}), image_identity(same, {32, 64}));
  EXPECT_NE(image_identity(png, {32, 64}), image_identity(png, {64, 32}));  // the resize counts
  RgbImage changed = png;
  changed.pixels[100] ^= 1;
  EXPECT_NE(image_identity(png, {32, 64}), image_identity(changed, {32, 64}));
  // Same bytes, other shape: not the same image.
  RgbImage reshaped = png;
  std::swap(reshaped.width, reshaped.height);
  EXPECT_NE(image_identity(png, {32, 64}), image_identity(reshaped, {32, 64}));
}

}  // namespace
}  // namespace qmlx::image
