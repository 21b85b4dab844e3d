// ImageError: why an image was refused, for the routes to answer 400 naming the content part.
// The reason tells a bound (bytes, pixels, aspect ratio) from a file that is not a readable
// image; the message names the limit and the values, or what the decoder found wrong.
#pragma once

#include <string>

#include "base/error.h"

namespace qmlx::image {

enum class ImageErrorReason {
  kTooManyBytes,   // the encoded bytes exceed ImageLimits::max_bytes
  kTooManyPixels,  // the header's width x height exceeds ImageLimits::max_pixels
  kAspectRatio,    // the longer side over the shorter exceeds ImageLimits::max_aspect_ratio
  kUnsupported,    // not PNG, JPEG, WebP or GIF (by magic bytes), or a feature we do not take
  kCorrupt,        // the decoder refused the data (truncated, bad checksum, bad stream)
};

class ImageError : public Error {
 public:
  ImageError(ImageErrorReason reason, const std::string& message)
      : Error(message), reason_(reason) {}
  ImageErrorReason reason() const { return reason_; }

 private:
  ImageErrorReason reason_;
};

}  // namespace qmlx::image
