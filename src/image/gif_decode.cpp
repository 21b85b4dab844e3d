// GIF through giflib, first frame only: the records are read in order up to the first image,
// whose lines are decoded one at a time, and the rest of the file (further frames of an
// animation) is never touched. giflib reports errors by return value.
#include <gif_lib.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "image/format_decoders.h"
#include "image/image_error.h"

namespace qmlx::image {
namespace {

struct GifSource {
  std::span<const uint8_t> bytes;
  size_t offset = 0;
};

int read_from_memory(GifFileType* gif, GifByteType* out, int wanted) {
  auto* source = static_cast<GifSource*>(gif->UserData);
  const size_t n = std::min(size_t(wanted), source->bytes.size() - source->offset);
  std::memcpy(out, source->bytes.data() + source->offset, n);
  source->offset += n;
  return int(n);
}

struct GifCloser {
  void operator()(GifFileType* gif) const {
    int error = 0;
    DGifCloseFile(gif, &error);
  }
};

[[noreturn]] void corrupt(int error) {
  const char* why = GifErrorString(error);
  throw ImageError(ImageErrorReason::kCorrupt,
                   std::string("corrupt GIF image: ") + (why ? why : "unknown error"));
}

// The frame row that the i-th line of an interlaced frame of `height` rows holds: GIF sends
// rows 0, 8, 16, ... then 4, 12, ... then 2, 6, ... then 1, 3, ...
int interlaced_row(int line, int height) {
  static constexpr int kStart[4] = {0, 4, 2, 1}, kStep[4] = {8, 8, 4, 2};
  for (int pass = 0; pass < 4; ++pass) {
    const int rows =
        height > kStart[pass] ? (height - kStart[pass] + kStep[pass] - 1) / kStep[pass] : 0;
    if (line < rows) return kStart[pass] + line * kStep[pass];
    line -= rows;
  }
  return -1;
}

// The first frame's indexes, coloured, on the canvas. Transparent pixels, and the canvas the
// frame does not cover, are white (transparency over white, as for every other format).
void paint_frame(GifFileType* gif, int transparent, RgbImage* canvas) {
  const GifImageDesc& desc = gif->Image;
  const ColorMapObject* colors = desc.ColorMap ? desc.ColorMap : gif->SColorMap;
  if (!colors) {
    throw ImageError(ImageErrorReason::kCorrupt,
                     "corrupt GIF image: the first frame has no colour table");
  }
  std::vector<GifPixelType> line(size_t(desc.Width));
  for (int i = 0; i < desc.Height; ++i) {
    if (DGifGetLine(gif, line.data(), desc.Width) == GIF_ERROR) corrupt(gif->Error);
    const int frame_row = desc.Interlace ? interlaced_row(i, desc.Height) : i;
    const int y = desc.Top + frame_row;
    if (frame_row < 0 || y >= canvas->height) continue;
    uint8_t* row = canvas->row(y);
    for (int x = 0; x < desc.Width; ++x) {
      const int cx = desc.Left + x;
      if (cx >= canvas->width || line[size_t(x)] == transparent) continue;
      // An index past a short colour table shows black (the table's missing entries).
      const bool known = line[size_t(x)] < colors->ColorCount;
      const GifColorType color = known ? colors->Colors[line[size_t(x)]] : GifColorType{0, 0, 0};
      row[size_t(cx) * 3 + 0] = color.Red;
      row[size_t(cx) * 3 + 1] = color.Green;
      row[size_t(cx) * 3 + 2] = color.Blue;
    }
  }
}

}  // namespace

DecodedFrame decode_gif(std::span<const uint8_t> bytes, const ImageLimits& limits) {
  GifSource source{bytes};
  int error = 0;
  std::unique_ptr<GifFileType, GifCloser> gif(DGifOpen(&source, read_from_memory, &error));
  if (!gif) corrupt(error);
  check_dimensions(uint64_t(gif->SWidth), uint64_t(gif->SHeight), limits, "GIF image");

  int transparent = NO_TRANSPARENT_COLOR;
  for (;;) {
    GifRecordType record;
    if (DGifGetRecordType(gif.get(), &record) == GIF_ERROR) corrupt(gif->Error);
    if (record == TERMINATE_RECORD_TYPE) {
      throw ImageError(ImageErrorReason::kCorrupt, "corrupt GIF image: it holds no frame");
    }
    if (record == EXTENSION_RECORD_TYPE) {
      int code = 0;
      GifByteType* block = nullptr;
      if (DGifGetExtension(gif.get(), &code, &block) == GIF_ERROR) corrupt(gif->Error);
      if (code == GRAPHICS_EXT_FUNC_CODE && block && block[0] >= 4) {
        GraphicsControlBlock control;
        DGifExtensionToGCB(block[0], block + 1, &control);
        transparent = control.TransparentColor;
      }
      while (block) {
        if (DGifGetExtensionNext(gif.get(), &block) == GIF_ERROR) corrupt(gif->Error);
      }
      continue;
    }
    if (record != IMAGE_DESC_RECORD_TYPE) continue;
    if (DGifGetImageDesc(gif.get()) == GIF_ERROR) corrupt(gif->Error);
    // The frame's lines are decoded even where they fall outside the canvas: bound them too.
    check_dimensions(uint64_t(gif->Image.Width), uint64_t(gif->Image.Height), limits, "GIF frame");
    DecodedFrame frame;
    frame.image = RgbImage(gif->SWidth, gif->SHeight);
    std::memset(frame.image.pixels.data(), 0xFF, frame.image.pixels.size());
    paint_frame(gif.get(), transparent, &frame.image);
    return frame;
  }
}

}  // namespace qmlx::image
