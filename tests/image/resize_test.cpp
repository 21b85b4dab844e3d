// smart_resize against the processor's formula in Python, and resize_bicubic_like_pil against
// PIL's Image.resize(BICUBIC), uint8 for uint8.
#include "image/pil_bicubic_resize.h"
#include "image/smart_resize.h"
#include "tests/image/fixtures.h"

namespace qmlx::image {
namespace {

using testing::fixture_image;
using testing::manifest;

TEST(SmartResize, MatchesTheProcessorsFormulaOnManySizes) {
  const auto& rows = manifest()["smart_resize"];
  ASSERT_GT(rows.size(), 2000u);
  for (const auto& r : rows) {
    const ResizedSize got = smart_resize(r[0], r[1], r[2], r[3], r[4]);
    ASSERT_EQ(got, (ResizedSize{r[5], r[6]})) << r.dump();
  }
}

TEST(SmartResize, KnownSizes) {
  // Qwen3.5's defaults: multiples of 32, 65,536 to 16,777,216 pixels.
  EXPECT_EQ(smart_resize(1080, 1920, 32, 65536, 16777216), (ResizedSize{1088, 1920}));
  EXPECT_EQ(smart_resize(100, 100, 32, 65536, 16777216), (ResizedSize{256, 256}));
  EXPECT_EQ(smart_resize(48, 48, 32, 0, 1 << 30), (ResizedSize{64, 64}));  // 1.5 rounds to 2
  EXPECT_EQ(smart_resize(80, 80, 32, 0, 1 << 30), (ResizedSize{64, 64}));  // 2.5 rounds to 2
  EXPECT_EQ(smart_resize(2160, 3840, 32, 65536, 1 << 20), (ResizedSize{768, 1344}));
}

TEST(PilBicubicResize, EqualsPilUint8ForUint8) {
  ASSERT_GE(manifest()["resize"].size(), 10u);
  for (const auto& c : manifest()["resize"]) {
    const std::string name = c["name"];
    const int sh = c["src"][0], sw = c["src"][1], dh = c["out"][0], dw = c["out"][1];
    SCOPED_TRACE(name + ": " + std::to_string(sw) + "x" + std::to_string(sh) + " to " +
                 std::to_string(dw) + "x" + std::to_string(dh));
    const RgbImage out = resize_bicubic_like_pil(fixture_image(name + ".src", sw, sh), dw, dh);
    ASSERT_EQ(out.width, dw);
    ASSERT_EQ(out.height, dh);
    const RgbImage pil = fixture_image(name + ".out", dw, dh);
    size_t differing = 0;
    for (size_t i = 0; i < pil.pixels.size(); ++i) differing += out.pixels[i] != pil.pixels[i];
    EXPECT_EQ(differing, 0u) << "of " << pil.pixels.size() << " samples";
  }
}

TEST(PilBicubicResize, SameSizeIsACopy) {
  const RgbImage image = fixture_image("resize0.src", 64, 48);
  EXPECT_EQ(resize_bicubic_like_pil(image, 64, 48).pixels, image.pixels);
}

}  // namespace
}  // namespace qmlx::image
