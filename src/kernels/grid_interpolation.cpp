#include "kernels/grid_interpolation.h"

#include <algorithm>
#include <cstddef>
#include <vector>

#include "base/error.h"

namespace qmlx {
namespace {

// The two table indices one output coordinate reads and the weight of the second.
struct Taps {
  int lo = 0, hi = 0;
  float frac = 0.f;
};

std::vector<Taps> axis_taps(int side, int n) {
  std::vector<Taps> taps(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const float y = linspace_point(float(side - 1), n, i);
    Taps& t = taps[size_t(i)];
    t.lo = int(y);  // y >= 0: truncation is the floor, as torch's .int()
    t.hi = std::min(t.lo + 1, side - 1);
    t.frac = y - float(t.lo);
  }
  return taps;
}

}  // namespace

float linspace_point(float end, int n, int i) {
  if (n == 1) return 0.f;
  // torch fills the first half forwards from the start and the second half backwards from the
  // end, so both ends are exact.
  const float step = end / float(n - 1);
  return i < n / 2 ? step * float(i) : end - step * float(n - 1 - i);
}

void interpolate_grid(const WeightMatrix& table, int side, int h, int w, float* out) {
  if (table.rows != side * side)
    throw Error("position grid has " + std::to_string(table.rows) + " rows, expected " +
                std::to_string(side) + "^2");
  const size_t dim = size_t(table.cols);
  const std::vector<Taps> rows = axis_taps(side, h), cols = axis_taps(side, w);
  std::vector<float> corner(4 * dim);
  for (int i = 0; i < h; ++i)
    for (int j = 0; j < w; ++j) {
      const Taps &y = rows[size_t(i)], &x = cols[size_t(j)];
      const int index[4] = {y.lo * side + x.lo, y.lo * side + x.hi, y.hi * side + x.lo,
                            y.hi * side + x.hi};
      const float weight[4] = {(1.f - y.frac) * (1.f - x.frac), (1.f - y.frac) * x.frac,
                               y.frac * (1.f - x.frac), y.frac * x.frac};
      for (int c = 0; c < 4; ++c) dequantize_rows(table, index[c], index[c] + 1, &corner[c * dim]);
      float* o = out + (size_t(i) * w + j) * dim;
      for (size_t d = 0; d < dim; ++d) {
        float sum = weight[0] * corner[d];
        for (int c = 1; c < 4; ++c) sum += weight[c] * corner[c * dim + d];
        o[d] = sum;
      }
    }
}

}  // namespace qmlx
