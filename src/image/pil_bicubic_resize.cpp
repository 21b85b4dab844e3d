#include "image/pil_bicubic_resize.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace qmlx::image {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;  // 8 bits of result, 2 of headroom for overshoot
constexpr double kSupport = 2.0;            // the cubic kernel is zero from |x| = 2 on

double cubic(double x) {
  constexpr double a = -0.5;
  x = std::fabs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

// The taps of one axis: for each output index, the first source index and the fixed-point
// weights of the sources from there on (`taps` slots each, unused ones zero).
struct AxisTaps {
  int taps = 0;
  std::vector<int> first;
  std::vector<int> count;
  std::vector<int32_t> weights;  // out_size * taps
};

int32_t to_fixed(double weight) {
  const double scaled = weight * (1 << kPrecisionBits);
  return int32_t(weight < 0 ? scaled - 0.5 : scaled + 0.5);  // C truncation: half away from 0
}

AxisTaps axis_taps(int in_size, int out_size) {
  const double scale = double(in_size) / out_size;
  const double filterscale = std::max(scale, 1.0);
  const double support = kSupport * filterscale;
  const double inverse = 1.0 / filterscale;  // PIL multiplies by it (not divides): same rounding
  AxisTaps axis;
  axis.taps = int(std::ceil(support)) * 2 + 1;
  axis.first.resize(size_t(out_size));
  axis.count.resize(size_t(out_size));
  axis.weights.assign(size_t(out_size) * size_t(axis.taps), 0);
  std::vector<double> w(size_t(axis.taps));
  for (int i = 0; i < out_size; ++i) {
    const double center = (i + 0.5) * scale;
    const int lo = std::max(int(center - support + 0.5), 0);
    const int hi = std::min(int(center + support + 0.5), in_size);
    const int n = hi - lo;
    double sum = 0.0;
    for (int j = 0; j < n; ++j) {
      w[size_t(j)] = cubic((j + lo - center + 0.5) * inverse);
      sum += w[size_t(j)];
    }
    for (int j = 0; j < n; ++j) {
      const double normalised = sum != 0.0 ? w[size_t(j)] / sum : w[size_t(j)];
      axis.weights[size_t(i) * size_t(axis.taps) + size_t(j)] = to_fixed(normalised);
    }
    axis.first[size_t(i)] = lo;
    axis.count[size_t(i)] = n;
  }
  return axis;
}

uint8_t clip8(int32_t accumulated) {
  return uint8_t(std::clamp(accumulated >> kPrecisionBits, 0, 255));
}

// One channel sample of the output: the weighted sum of `n` source samples `stride` bytes
// apart starting at `src`.
uint8_t convolve(const uint8_t* src, size_t stride, const int32_t* weights, int n) {
  int32_t sum = 1 << (kPrecisionBits - 1);
  for (int j = 0; j < n; ++j) sum += int32_t(src[size_t(j) * stride]) * weights[j];
  return clip8(sum);
}

// Rows [row0, row0 + rows) of `image` resized to `width` along x.
RgbImage horizontal_pass(const RgbImage& image, int row0, int rows, int width) {
  const AxisTaps axis = axis_taps(image.width, width);
  RgbImage out(width, rows);
  for (int y = 0; y < rows; ++y) {
    const uint8_t* src = image.row(row0 + y);
    uint8_t* dst = out.row(y);
    for (int x = 0; x < width; ++x) {
      const int32_t* w = &axis.weights[size_t(x) * size_t(axis.taps)];
      const uint8_t* first = src + size_t(axis.first[size_t(x)]) * 3;
      for (int c = 0; c < 3; ++c)
        dst[size_t(x) * 3 + c] = convolve(first + c, 3, w, axis.count[size_t(x)]);
    }
  }
  return out;
}

// `image` resized to `height` along y, its row 0 being source row `row0` of the axis taps.
RgbImage vertical_pass(const RgbImage& image, const AxisTaps& axis, int row0, int height) {
  RgbImage out(image.width, height);
  const size_t stride = size_t(image.width) * 3;
  for (int y = 0; y < height; ++y) {
    const int32_t* w = &axis.weights[size_t(y) * size_t(axis.taps)];
    const uint8_t* first = image.row(axis.first[size_t(y)] - row0);
    uint8_t* dst = out.row(y);
    for (size_t i = 0; i < stride; ++i)
      dst[i] = convolve(first + i, stride, w, axis.count[size_t(y)]);
  }
  return out;
}

}  // namespace

RgbImage resize_bicubic_like_pil(const RgbImage& image, int width, int height) {
  const bool horizontal = width != image.width;
  const bool vertical = height != image.height;
  if (!horizontal && !vertical) return image;
  if (!vertical) return horizontal_pass(image, 0, image.height, width);
  const AxisTaps rows = axis_taps(image.height, height);
  if (!horizontal) return vertical_pass(image, rows, 0, height);
  // Only the source rows some output row reads go through the horizontal pass.
  const int first = rows.first.front();
  const int last = rows.first.back() + rows.count.back();
  return vertical_pass(horizontal_pass(image, first, last - first, width), rows, first, height);
}

}  // namespace qmlx::image
