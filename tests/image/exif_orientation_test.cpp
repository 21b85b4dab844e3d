// exif_orientation on hand-made TIFF blocks, well and badly formed (the decode tests cover the
// orientations end to end against PIL's exif_transpose).
#include "image/exif_orientation.h"

#include <gtest/gtest.h>

#include <vector>

namespace qmlx::image {
namespace {

// "Exif\0\0" + a TIFF header + IFD0 with one entry (tag, type, count, value).
std::vector<uint8_t> exif_block(bool little, uint16_t tag, uint16_t type, uint32_t count,
                                uint16_t value) {
  std::vector<uint8_t> out = {'E', 'x', 'i', 'f', 0, 0};
  auto u16 = [&](uint16_t v) {
    if (little)
      out.insert(out.end(), {uint8_t(v), uint8_t(v >> 8)});
    else
      out.insert(out.end(), {uint8_t(v >> 8), uint8_t(v)});
  };
  auto u32 = [&](uint32_t v) {
    if (little) {
      u16(uint16_t(v));
      u16(uint16_t(v >> 16));
    } else {
      u16(uint16_t(v >> 16));
      u16(uint16_t(v));
    }
  };
  out.insert(out.end(), little ? std::initializer_list<uint8_t>{'I', 'I', 42, 0}
                               : std::initializer_list<uint8_t>{'M', 'M', 0, 42});
  u32(8);
  u16(1);
  u16(tag);
  u16(type);
  u32(count);
  u16(value);
  u16(0);
  u32(0);
  return out;
}

TEST(ExifOrientation, ReadsBothByteOrders) {
  for (uint16_t v = 1; v <= 8; ++v) {
    EXPECT_EQ(exif_orientation(exif_block(true, 0x0112, 3, 1, v)), v);
    EXPECT_EQ(exif_orientation(exif_block(false, 0x0112, 3, 1, v)), v);
  }
}

TEST(ExifOrientation, AnythingMalformedIsUpright) {
  EXPECT_EQ(exif_orientation(exif_block(true, 0x0112, 3, 1, 9)), 1);
  EXPECT_EQ(exif_orientation(exif_block(true, 0x0112, 4, 1, 6)), 1);  // LONG, not SHORT
  EXPECT_EQ(exif_orientation(exif_block(true, 0x0110, 3, 1, 6)), 1);  // another tag
  std::vector<uint8_t> block = exif_block(true, 0x0112, 3, 1, 6);
  for (size_t n = 0; n < block.size(); ++n) {
    const int got = exif_orientation({block.data(), n});  // cut short: reads stay inside
    EXPECT_TRUE(got == 1 || got == 6);
  }
  block[10] = 0xF0;  // IFD0 offset far past the end
  EXPECT_EQ(exif_orientation(block), 1);
}

TEST(ExifOrientation, TransformsSwapSidesFrom5On) {
  RgbImage image(3, 2);
  for (size_t i = 0; i < image.pixels.size(); ++i) image.pixels[i] = uint8_t(i);
  for (int o = 1; o <= 8; ++o) {
    const RgbImage out = apply_exif_orientation(image, o);
    EXPECT_EQ(out.width, o >= 5 ? 2 : 3) << o;
    EXPECT_EQ(out.height, o >= 5 ? 3 : 2) << o;
  }
  // Orientation 6 (shown turned 90 clockwise): the top-left shown is the bottom-left stored.
  const RgbImage turned = apply_exif_orientation(image, 6);
  EXPECT_EQ(turned.row(0)[0], image.row(1)[0]);
}

}  // namespace
}  // namespace qmlx::image
