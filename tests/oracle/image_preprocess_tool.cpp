// Test tool for tests/oracle/mtmd_vs_qmlx.py: an image file through qmlx's own decoding and
// preprocessing (src/image: decode_image, preprocess_for_vision), as the server runs them.
//   qmlx_image_preprocess IMAGE MIN_PIXELS MAX_PIXELS OUT
// MIN_PIXELS / MAX_PIXELS: smart_resize's bounds (preprocessor_config.json's; the other
// settings are Qwen3.5's). OUT gets pixel_values, float32 [num_patches][patch_dim], rows in the
// processor's merge-block order. stdout: {"grid": [t, h, w], "resized": [height, width]}.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "base/error.h"
#include "image/image_decode.h"
#include "image/vision_preprocess.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s IMAGE MIN_PIXELS MAX_PIXELS OUT\n", argv[0]);
    return 2;
  }
  try {
    std::ifstream in(argv[1], std::ios::binary);
    if (!in) throw qmlx::Error(std::string("cannot read ") + argv[1]);
    const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), {}};
    qmlx::image::VisionPreprocessConfig config;
    config.min_pixels = std::stoll(argv[2]);
    config.max_pixels = std::stoll(argv[3]);
    const qmlx::image::VisionInput input =
        qmlx::image::preprocess_for_vision(qmlx::image::decode_image(bytes), config);
    std::ofstream out(argv[4], std::ios::binary);
    out.write(reinterpret_cast<const char*>(input.pixel_values.data()),
              std::streamsize(input.pixel_values.size() * sizeof(float)));
    if (!out) throw qmlx::Error(std::string("cannot write ") + argv[4]);
    std::printf("{\"grid\": [%d, %d, %d], \"resized\": [%d, %d]}\n", input.grid.t, input.grid.h,
                input.grid.w, input.resized.height, input.resized.width);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
