// PNG through libpng. libpng reports errors by longjmp: every libpng call runs inside
// read_png, whose frame holds only trivially destructible locals, so the jump back to its
// setjmp skips no C++ destructor (which would be undefined behaviour); the objects that own
// memory (the png structs, the pixels) live in decode_png's frame and outlive the jump.
#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "image/alpha_over_white.h"
#include "image/exif_orientation.h"
#include "image/format_decoders.h"
#include "image/image_error.h"

namespace qmlx::image {
namespace {

// Ancillary chunks can hold compressed text; a bound on what libpng may allocate for one keeps a
// crafted zTXt or iCCP from being a bomb of its own.
constexpr png_alloc_size_t kMaxChunkBytes = 8u << 20;

struct PngSource {
  std::span<const uint8_t> bytes;
  size_t offset = 0;
};

struct PngFailure {
  char message[256] = "";
};

void read_from_memory(png_structp png, png_bytep out, size_t n) {
  auto* source = static_cast<PngSource*>(png_get_io_ptr(png));
  if (source->bytes.size() - source->offset < n) png_error(png, "the data ends early (truncated)");
  std::memcpy(out, source->bytes.data() + source->offset, n);
  source->offset += n;
}

[[noreturn]] void on_error(png_structp png, png_const_charp message) {
  auto* failure = static_cast<PngFailure*>(png_get_error_ptr(png));
  std::snprintf(failure->message, sizeof failure->message, "%s", message);
  png_longjmp(png, 1);
}

// Warnings (a bad ancillary CRC, an odd iCCP profile) leave the pixels good: PIL reads such
// files too.
void on_warning(png_structp, png_const_charp) {}

struct PngSize {
  uint32_t width = 0;
  uint32_t height = 0;
};

// The size in the IHDR chunk, which the format puts first (signature, length, "IHDR", width,
// height): read by hand so the bounds are checked before libpng reads any further chunk.
PngSize png_header_size(std::span<const uint8_t> bytes) {
  if (bytes.size() < 24 || std::memcmp(bytes.data() + 12, "IHDR", 4) != 0) {
    throw ImageError(ImageErrorReason::kCorrupt, "corrupt PNG image: no IHDR chunk first");
  }
  auto be32 = [&](size_t at) {
    return uint32_t(bytes[at]) << 24 | uint32_t(bytes[at + 1]) << 16 |
           uint32_t(bytes[at + 2]) << 8 | bytes[at + 3];
  };
  return {be32(16), be32(20)};
}

// Requests 8-bit RGB, or RGBA when the file has alpha or tRNS transparency (to be composited
// over white), whatever its colour type and depth; returns the channels. 16-bit samples keep
// their high byte (PIL's reading of 16-bit RGB; for 16-bit grey PIL clips the 16-bit value to
// 255 instead, which turns most of the image white: we keep the high byte there too).
int request_rgb8(png_structp png, png_infop info) {
  const int color_type = png_get_color_type(png, info);
  if (png_get_bit_depth(png, info) == 16) png_set_strip_16(png);
  if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color_type == PNG_COLOR_TYPE_GRAY) png_set_expand_gray_1_2_4_to_8(png);
  if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);
  if (!(color_type & PNG_COLOR_MASK_COLOR)) png_set_gray_to_rgb(png);
  png_set_packing(png);
  const bool alpha = (color_type & PNG_COLOR_MASK_ALPHA) || png_get_valid(png, info, PNG_INFO_tRNS);
  return alpha ? 4 : 3;
}

// False when libpng failed (the message is in the error pointer). The caller owns `frame`
// and `rows`; here they are only filled.
bool read_png(png_structp png, png_infop info, const PngSize& header, DecodedFrame* frame,
              std::vector<png_bytep>* rows, int* channels) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_chunk_malloc_max(png, kMaxChunkBytes);
  // Text and colour-profile chunks are never used: skip them rather than inflate them.
  static const png_byte kSkipped[] = "tEXt\0zTXt\0iTXt\0iCCP\0sPLT";
  png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, kSkipped, 5);
  png_read_info(png, info);  // reads on up to the first IDAT: the size was checked before
  const png_uint_32 width = png_get_image_width(png, info);
  const png_uint_32 height = png_get_image_height(png, info);
  if (width != header.width || height != header.height) png_error(png, "IHDR is not first");

  png_bytep exif = nullptr;
  png_uint_32 exif_size = 0;
  if (png_get_eXIf_1(png, info, &exif_size, &exif) && exif) {
    frame->exif_orientation = exif_orientation({exif, exif_size});
  }

  *channels = request_rgb8(png, info);
  const size_t row_bytes = size_t(width) * size_t(*channels);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  if (png_get_rowbytes(png, info) != row_bytes) png_error(png, "unexpected row layout");

  frame->image = RgbImage(int(width), int(height));
  std::vector<uint8_t>& pixels = frame->image.pixels;
  pixels.resize(row_bytes * height);  // RGBA is composited in place by the caller
  rows->resize(height);
  for (png_uint_32 y = 0; y < height; ++y) (*rows)[y] = pixels.data() + size_t(y) * row_bytes;
  png_read_image(png, rows->data());
  // Nothing after the image data is read: like PIL, a file cut after its last IDAT still
  // gives its pixels.
  return true;
}

struct PngReader {
  png_structp png = nullptr;
  png_infop info = nullptr;
  ~PngReader() { png_destroy_read_struct(&png, info ? &info : nullptr, nullptr); }
};

}  // namespace

DecodedFrame decode_png(std::span<const uint8_t> bytes, const ImageLimits& limits) {
  const PngSize header = png_header_size(bytes);
  check_dimensions(header.width, header.height, limits, "PNG image");
  PngFailure failure;
  PngReader reader;
  reader.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &failure, on_error, on_warning);
  if (reader.png) reader.info = png_create_info_struct(reader.png);
  if (!reader.info) throw ImageError(ImageErrorReason::kCorrupt, "PNG: out of memory");
  PngSource source{bytes};
  png_set_read_fn(reader.png, &source, read_from_memory);

  DecodedFrame frame;
  std::vector<png_bytep> rows;
  int channels = 3;
  if (!read_png(reader.png, reader.info, header, &frame, &rows, &channels)) {
    throw ImageError(ImageErrorReason::kCorrupt,
                     std::string("corrupt PNG image: ") + failure.message);
  }
  if (channels == 4) {
    RgbImage& image = frame.image;
    rgba_over_white(image.pixels.data(), image.pixels.size() / 4, image.pixels.data());
    image.pixels.resize(size_t(image.width) * image.height * 3);
  }
  return frame;
}

}  // namespace qmlx::image
