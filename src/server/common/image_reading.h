// ImageReading: what the request parsers read a request's images with: whether the model reads
// images at all (and why not), its preprocessing, and the server's bounds. The routes build it
// per request from the model runtime and the flags; a default one refuses every image, as a
// model without a vision tower does.
#pragma once

#include <cstdint>
#include <string>

#include "image/image_limits.h"
#include "image/vision_preprocess.h"
#include "server/config/options.h"

namespace qmlx::server {

struct ImageReading {
  // Empty when the model reads images; otherwise why not (the refusal's last words).
  std::string vision_unavailable = "the model has no vision tower";
  image::VisionPreprocessConfig preprocess;
  image::ImageLimits limits;
  int max_images = kDefaultMaxImagesPerRequest;
};

// The reading for a model under --max-image-pixels, --max-images-per-request and
// --image-max-tokens. The pixel bound applies to the decoded image (a 400 above it) and to what
// the encoder is given; the token budget only to the latter: smart_resize's max_pixels is
// lowered to both (never below the checkpoint's min_pixels, which it must meet), so a bigger
// image is scaled down to fit, as Qwen's processor does with its own max_pixels.
ImageReading image_reading(std::string vision_unavailable, image::VisionPreprocessConfig preprocess,
                           uint64_t max_image_pixels, int max_images_per_request,
                           int64_t image_max_tokens);

}  // namespace qmlx::server
