// decode_image against PIL on files of every format and mode, and on files that must be
// refused: over a bound (refused from the header, before decoding), truncated, corrupted,
// not an image at all.
#include <cstring>
#include <random>
#include <string>

#include "image/alpha_over_white.h"
#include "image/image_decode.h"
#include "image/image_error.h"
#include "image/image_format.h"
#include "tests/image/fixtures.h"

namespace qmlx::image {
namespace {

using testing::fixture_bytes;
using testing::manifest;

// The reason decode_image refused `bytes` for, or nullopt when it decoded them.
std::optional<ImageErrorReason> refusal(std::span<const uint8_t> bytes,
                                        const ImageLimits& limits = {},
                                        std::string* message = nullptr) {
  try {
    decode_image(bytes, limits);
    return std::nullopt;
  } catch (const ImageError& e) {
    if (message) *message = e.what();
    return e.reason();
  }
}

TEST(ImageDecode, EveryFormatAndModeMatchesPil) {
  ASSERT_GE(manifest()["decode"].size(), 30u);
  for (const auto& c : manifest()["decode"]) {
    const std::string file = c["file"];
    SCOPED_TRACE(file);
    const RgbImage image = decode_image(fixture_bytes(file));
    ASSERT_EQ(image.width, int(c["width"]));
    ASSERT_EQ(image.height, int(c["height"]));
    const std::vector<uint8_t> expected = fixture_bytes(file + ".rgb");
    size_t differing = 0;
    int worst = 0;
    for (size_t i = 0; i < expected.size(); ++i) {
      const int d = std::abs(int(image.pixels[i]) - int(expected[i]));
      differing += d != 0;
      worst = std::max(worst, d);
    }
    EXPECT_EQ(differing, 0u) << "of " << expected.size() << " samples, worst by " << worst;
  }
}

TEST(ImageDecode, OverWhiteEqualsPilAlphaCompositeEverywhere) {
  const std::vector<uint8_t> pil = fixture_bytes("over_white.bin");  // [colour][alpha]
  ASSERT_EQ(pil.size(), 65536u);
  for (int c = 0; c < 256; ++c) {
    for (int a = 0; a < 256; ++a) {
      ASSERT_EQ(over_white(uint8_t(c), uint8_t(a)), pil[size_t(c) * 256 + size_t(a)])
          << "colour " << c << " alpha " << a;
    }
  }
}

TEST(ImageDecode, SniffsTheFormatFromMagicBytesOnly) {
  EXPECT_EQ(sniff_image_format(fixture_bytes("rgb.png")), ImageFormat::kPng);
  EXPECT_EQ(sniff_image_format(fixture_bytes("baseline.jpg")), ImageFormat::kJpeg);
  EXPECT_EQ(sniff_image_format(fixture_bytes("lossy.webp")), ImageFormat::kWebp);
  EXPECT_EQ(sniff_image_format(fixture_bytes("palette.gif")), ImageFormat::kGif);
  const std::string riff_wave = "RIFF\x10\0\0\0WAVEfmt ";
  EXPECT_EQ(
      sniff_image_format({reinterpret_cast<const uint8_t*>(riff_wave.data()), riff_wave.size()}),
      std::nullopt);
  for (const std::string junk : {"", "\x89PN", "<svg xmlns=...>", "BM\x36\0\0\0"}) {
    const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(junk.data()),
                                         junk.size());
    EXPECT_EQ(refusal(bytes), ImageErrorReason::kUnsupported) << junk;
  }
}

TEST(ImageDecode, RefusesOverTheByteLimitNamingIt) {
  const std::vector<uint8_t> png = fixture_bytes("rgb.png");
  std::string message;
  EXPECT_EQ(refusal(png, {.max_bytes = 100}, &message), ImageErrorReason::kTooManyBytes);
  EXPECT_NE(message.find("limit of 100 bytes"), std::string::npos) << message;
  EXPECT_NE(message.find(std::to_string(png.size())), std::string::npos) << message;
}

TEST(ImageDecode, EveryDecoderRefusesOverThePixelLimitNamingIt) {
  for (const char* file : {"rgb.png", "baseline.jpg", "progressive.jpg", "lossless.webp",
                           "lossy.webp", "animated.webp", "palette.gif", "animated.gif"}) {
    std::string message;
    EXPECT_EQ(refusal(fixture_bytes(file), {.max_pixels = 850}, &message),
              ImageErrorReason::kTooManyPixels)
        << file;
    EXPECT_NE(message.find("37x23 = 851 pixels, over the limit of 850"), std::string::npos)
        << message;
  }
  EXPECT_EQ(refusal(fixture_bytes("rgb.png"), {.max_pixels = 851}), std::nullopt);
}

uint32_t crc32(std::span<const uint8_t> bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (uint8_t b : bytes) {
    crc ^= b;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

void put_be32(std::vector<uint8_t>* out, uint32_t v) {
  for (int shift : {24, 16, 8, 0}) out->push_back(uint8_t(v >> shift));
}

// A PNG that is only a signature and an IHDR claiming width x height: any answer other than a
// bound means the decoder went past the header.
std::vector<uint8_t> png_header_only(uint32_t width, uint32_t height) {
  std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  std::vector<uint8_t> chunk = {'I', 'H', 'D', 'R'};
  put_be32(&chunk, width);
  put_be32(&chunk, height);
  chunk.insert(chunk.end(), {8, 2, 0, 0, 0});  // 8-bit RGB, no interlace
  put_be32(&png, 13);
  png.insert(png.end(), chunk.begin(), chunk.end());
  put_be32(&png, crc32(chunk));
  return png;
}

TEST(ImageDecode, DecompressionBombsAreRefusedFromTheHeader) {
  EXPECT_EQ(refusal(png_header_only(100000, 100000)), ImageErrorReason::kTooManyPixels);
  EXPECT_EQ(refusal(png_header_only(1000, 4)), ImageErrorReason::kAspectRatio);
  EXPECT_EQ(refusal(png_header_only(800, 4)), ImageErrorReason::kCorrupt);  // in bounds: reads on

  std::vector<uint8_t> jpeg = fixture_bytes("baseline.jpg");
  for (size_t i = 2; i + 9 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xC0) {  // SOF0: length, precision, height, width
      jpeg[i + 5] = jpeg[i + 7] = 0xEA;
      jpeg[i + 6] = jpeg[i + 8] = 0x60;
      break;
    }
  }
  std::string message;
  EXPECT_EQ(refusal(jpeg, {}, &message), ImageErrorReason::kTooManyPixels);
  EXPECT_NE(message.find("60000x60000"), std::string::npos) << message;

  std::vector<uint8_t> gif = fixture_bytes("palette.gif");
  gif[6] = gif[7] = gif[8] = gif[9] = 0xFF;  // logical screen 65535 x 65535
  EXPECT_EQ(refusal(gif), ImageErrorReason::kTooManyPixels);

  std::vector<uint8_t> webp = fixture_bytes("lossy.webp");
  ASSERT_EQ(std::memcmp(webp.data() + 12, "VP8 ", 4), 0);
  // VP8 key frame: 14-bit width and height (plus 2 scale bits) after the start code.
  webp[26] = webp[28] = 0xFF;
  webp[27] = webp[29] = 0x3F;
  EXPECT_EQ(refusal(webp), ImageErrorReason::kTooManyPixels);
}

TEST(ImageDecode, AspectRatioOver200IsRefusedNamingIt) {
  std::string message;
  EXPECT_EQ(refusal(fixture_bytes("rgb.png"), {.max_aspect_ratio = 1.5}, &message),
            ImageErrorReason::kAspectRatio);
  EXPECT_NE(message.find("37x23"), std::string::npos) << message;
  EXPECT_EQ(refusal(fixture_bytes("rgb.png"), {.max_aspect_ratio = 1.7}), std::nullopt);
}

bool animated(const std::string& file) { return file.rfind("animated", 0) == 0; }

TEST(ImageDecode, TruncatedFilesAreACleanErrorInEveryFormat) {
  for (const auto& c : manifest()["decode"]) {
    const std::string file = c["file"];
    SCOPED_TRACE(file);
    const std::vector<uint8_t> bytes = fixture_bytes(file);
    // Every prefix (in steps): refused or decoded, never a crash (the ASan build checks reads).
    for (size_t n = 0; n < bytes.size(); n += 5) refusal({bytes.data(), n});
    // Half a single image is never a whole one. (An animation's first frame may fit in half.)
    if (!animated(file)) {
      EXPECT_EQ(refusal({bytes.data(), bytes.size() / 2}), ImageErrorReason::kCorrupt);
    }
  }
}

TEST(ImageDecode, CorruptedFilesAreACleanErrorInEveryFormat) {
  std::mt19937 random(29);
  for (const auto& c : manifest()["decode"]) {
    const std::string file = c["file"];
    SCOPED_TRACE(file);
    const std::vector<uint8_t> original = fixture_bytes(file);
    for (int trial = 0; trial < 150; ++trial) {
      std::vector<uint8_t> bytes = original;
      for (int flips = 1 + trial % 4; flips > 0; --flips) {
        bytes[random() % bytes.size()] ^= uint8_t(1 + random() % 255);
      }
      refusal(bytes);  // anything but an ImageError escapes and fails the test
    }
  }
  // A flipped byte inside PNG image data breaks its CRC: named as corrupt.
  std::vector<uint8_t> png = fixture_bytes("rgb.png");
  png[png.size() / 2] ^= 0x55;
  std::string message;
  EXPECT_EQ(refusal(png, {}, &message), ImageErrorReason::kCorrupt);
  EXPECT_NE(message.find("corrupt PNG image"), std::string::npos) << message;
}

// progressive.jpg with its last scan repeated `copies` more times: libjpeg only warns about a
// repeated scan, so without a bound each copy is one more pass over the coefficients.
std::vector<uint8_t> progressive_with_repeated_scan(int copies) {
  const std::vector<uint8_t> jpeg = fixture_bytes("progressive.jpg");
  size_t last_sos = 0;
  for (size_t i = 0; i + 1 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xDA) last_sos = i;
  }
  EXPECT_GT(last_sos, 0u);
  const size_t eoi = jpeg.size() - 2;  // the file ends with FF D9
  std::vector<uint8_t> out(jpeg.begin(), jpeg.begin() + long(eoi));
  for (int k = 0; k < copies; ++k)
    out.insert(out.end(), jpeg.begin() + long(last_sos), jpeg.begin() + long(eoi));
  out.insert(out.end(), {0xFF, 0xD9});
  return out;
}

TEST(ImageDecode, JpegWithTooManyProgressiveScansIsRefused) {
  std::string message;
  EXPECT_EQ(refusal(progressive_with_repeated_scan(600), {}, &message), ImageErrorReason::kCorrupt);
  EXPECT_NE(message.find("more than 500 progressive scans"), std::string::npos) << message;
  EXPECT_EQ(refusal(progressive_with_repeated_scan(100)), std::nullopt);
}

TEST(ImageDecode, GifWithoutAFrameIsCorrupt) {
  std::vector<uint8_t> gif = fixture_bytes("palette.gif");
  const size_t header = 13 + ((gif[10] & 0x80) ? 3u << ((gif[10] & 7) + 1) : 0);
  gif.resize(header);
  gif.push_back(0x3B);  // the trailer, straight after the global colour table
  std::string message;
  EXPECT_EQ(refusal(gif, {}, &message), ImageErrorReason::kCorrupt);
  EXPECT_NE(message.find("no frame"), std::string::npos) << message;
}

}  // namespace
}  // namespace qmlx::image
