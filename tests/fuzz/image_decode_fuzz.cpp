// Fuzz target: decode_image on arbitrary bytes (the PNG, JPEG, WebP and GIF decoders over
// Debian's libraries, our error handling around their longjmps, the EXIF reader, the header
// bounds), then the vision preprocessing of whatever decoded (smart_resize, the PIL bicubic
// resize, the patch layout). A bad image is an ImageError; nothing may crash, leak or read
// outside the input.
#include "image/image_decode.h"
#include "image/image_error.h"
#include "image/vision_preprocess.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Bounds well under the server's keep each execution quick; the code paths are the same.
  const qmlx::image::ImageLimits limits{.max_bytes = size_t{1} << 20, .max_pixels = 1u << 18};
  qmlx::image::VisionPreprocessConfig config;
  config.min_pixels = 32 * 32;
  config.max_pixels = 128 * 128;
  try {
    const qmlx::image::RgbImage image = qmlx::image::decode_image({data, size}, limits);
    qmlx::image::preprocess_for_vision(image, config);
  } catch (const qmlx::image::ImageError&) {
  }
  return 0;
}
