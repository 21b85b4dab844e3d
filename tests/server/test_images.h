// Small PNGs for the server's image tests (64 x 64 RGB gradients written by python3-pil), as the
// data URLs and base64 the APIs carry, and the reading that keeps their pads few: min_pixels
// 1,024 leaves a 64 x 64 image at its size, 4 x 4 patches, 4 pads.
#pragma once

#include <string>

#include "server/common/image_reading.h"

namespace qmlx::server::testing {

inline const std::string kPngA =
    "iVBORw0KGgoAAAANSUhEUgAAAEAAAABACAIAAAAlC+aJAAAAUUlEQVR42u3PQQkAMAzAwAwqfNKnYo/ChRi4U3dq89P"
    "qAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAP73ACKFA3belr1UAAAAAElFTkSuQmCC";
inline const std::string kPngB =
    "iVBORw0KGgoAAAANSUhEUgAAAEAAAABACAIAAAAlC+aJAAAAVElEQVR42u3PwQkAMAgEsKu4/8SFdgofQiAL5Lzk1mK"
    "d6lT2EhAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEJj3AS0gYPtJLm/3AAAAAElFTkSu"
    "QmCC";
inline constexpr int kPadsPerTestImage = 4;

inline std::string data_url(const std::string& base64) { return "data:image/png;base64," + base64; }

inline ImageReading test_image_reading() {
  ImageReading reading;
  reading.vision_unavailable.clear();
  reading.preprocess.min_pixels = 1024;
  return reading;
}

}  // namespace qmlx::server::testing
