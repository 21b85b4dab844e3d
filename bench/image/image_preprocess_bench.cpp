// Image input cost for bench/image/run.sh: for each file, the CPU time of decode_image, of the
// resize to smart_resize's size (Qwen3.5's defaults) and of the patch flattening, best of
// `repeats` runs each; one JSON line per file.
// Usage: image_preprocess_bench REPEATS FILE...
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "image/image_decode.h"
#include "image/pil_bicubic_resize.h"
#include "image/vision_preprocess.h"

namespace {

// CPU time of this thread: the build machine is shared, wall time would measure neighbours too.
double cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

template <typename Fn>
double best_ms(int repeats, Fn fn) {
  double best = 1e30;
  for (int i = 0; i < repeats; ++i) {
    const double start = cpu_seconds();
    fn();
    best = std::min(best, (cpu_seconds() - start) * 1e3);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s REPEATS FILE...\n", argv[0]);
    return 2;
  }
  using namespace qmlx::image;
  const int repeats = std::max(1, std::atoi(argv[1]));
  const VisionPreprocessConfig config;  // Qwen3.5's preprocessor_config.json
  const ImageLimits limits{.max_pixels = uint64_t{1} << 26};
  for (int a = 2; a < argc; ++a) {
    std::ifstream in(argv[a], std::ios::binary);
    const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), {}};
    RgbImage image;
    const double decode = best_ms(repeats, [&] { image = decode_image(bytes, limits); });
    const ResizedSize size =
        smart_resize(image.height, image.width, 32, config.min_pixels, config.max_pixels);
    RgbImage resized;
    const double resize = best_ms(
        repeats, [&] { resized = resize_bicubic_like_pil(image, size.width, size.height); });
    std::vector<float> patches;
    const double flatten = best_ms(repeats, [&] { patches = flatten_patches(resized, config); });
    std::printf(
        "{\"file\": \"%s\", \"width\": %d, \"height\": %d, \"resized\": [%d, %d], "
        "\"patches\": %zu, \"decode_ms\": %.2f, \"resize_ms\": %.2f, \"flatten_ms\": %.2f}\n",
        argv[a], image.width, image.height, size.width, size.height,
        patches.size() / size_t(3 * 2 * 16 * 16), decode, resize, flatten);
  }
  return 0;
}
