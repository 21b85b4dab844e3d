// WebP through libwebp's animation decoder (libwebpdemux), for still and animated files alike:
// it is what PIL uses (so the pixels agree), it gives the first frame of an animation on the
// full canvas, and its demuxer hands us the EXIF chunk. It reports errors by return value.
#include <webp/decode.h>
#include <webp/demux.h>

#include <memory>
#include <string>

#include "image/alpha_over_white.h"
#include "image/exif_orientation.h"
#include "image/format_decoders.h"
#include "image/image_error.h"

namespace qmlx::image {
namespace {

struct AnimDecoderDeleter {
  void operator()(WebPAnimDecoder* decoder) const { WebPAnimDecoderDelete(decoder); }
};

[[noreturn]] void corrupt(const std::string& why) {
  throw ImageError(ImageErrorReason::kCorrupt, "corrupt WebP image: " + why);
}

int orientation_of(const WebPDemuxer* demuxer) {
  WebPChunkIterator chunk;
  int orientation = 1;
  if (WebPDemuxGetChunk(demuxer, "EXIF", 1, &chunk)) {
    orientation = exif_orientation({chunk.chunk.bytes, chunk.chunk.size});
    WebPDemuxReleaseChunkIterator(&chunk);
  }
  return orientation;
}

}  // namespace

DecodedFrame decode_webp(std::span<const uint8_t> bytes, const ImageLimits& limits) {
  // The canvas size from the header alone (VP8X, or the single VP8/VP8L frame's own).
  WebPBitstreamFeatures features;
  if (WebPGetFeatures(bytes.data(), bytes.size(), &features) != VP8_STATUS_OK) {
    corrupt("unreadable header");
  }
  check_dimensions(uint64_t(features.width), uint64_t(features.height), limits, "WebP image");

  WebPAnimDecoderOptions options;
  if (!WebPAnimDecoderOptionsInit(&options)) corrupt("libwebp version mismatch");
  options.color_mode = MODE_RGBA;  // straight (not premultiplied) alpha
  options.use_threads = 0;
  const WebPData data{bytes.data(), bytes.size()};
  std::unique_ptr<WebPAnimDecoder, AnimDecoderDeleter> decoder(WebPAnimDecoderNew(&data, &options));
  if (!decoder) corrupt("the container or its frames do not parse (truncated?)");
  WebPAnimInfo info;
  if (!WebPAnimDecoderGetInfo(decoder.get(), &info)) corrupt("no canvas");
  // The demuxer's canvas is the one decoded: it must be the size that was checked.
  if (int(info.canvas_width) != features.width || int(info.canvas_height) != features.height) {
    corrupt("the canvas size disagrees with the header");
  }
  uint8_t* rgba = nullptr;
  int timestamp = 0;
  if (!WebPAnimDecoderGetNext(decoder.get(), &rgba, &timestamp))
    corrupt("the first frame does not decode");

  DecodedFrame frame;
  frame.image = RgbImage(features.width, features.height);
  rgba_over_white(rgba, size_t(features.width) * size_t(features.height),
                  frame.image.pixels.data());
  frame.exif_orientation = orientation_of(WebPAnimDecoderGetDemuxer(decoder.get()));
  return frame;
}

}  // namespace qmlx::image
