#include "summation_bounds.h"

#include <gtest/gtest.h>

#include <cmath>

#include "kernels/weight_matrix.h"

namespace qmlx::vulkan::testing {
namespace {

// Exact products in double, and S = sum |w x| per output, from the dequantized weights.
void exact_products(const WeightMatrix& w, const std::vector<float>& x, int T,
                    std::vector<double>* exact, std::vector<double>* magnitude) {
  exact->assign(size_t(T) * w.rows, 0);
  magnitude->assign(size_t(T) * w.rows, 0);
  std::vector<float> row(w.cols);
  for (int r = 0; r < w.rows; ++r) {
    dequantize_rows(w, r, r + 1, row.data());
    for (int t = 0; t < T; ++t) {
      double s = 0, m = 0;
      for (int k = 0; k < w.cols; ++k) {
        const double p = double(row[k]) * x[size_t(t) * w.cols + k];
        s += p;
        m += std::abs(p);
      }
      (*exact)[size_t(t) * w.rows + r] = s;
      (*magnitude)[size_t(t) * w.rows + r] = m;
    }
  }
}

}  // namespace

double gamma_bound(double n) {
  const double u = std::ldexp(1.0, -24);
  return n * u / (1 - n * u);
}

void expect_within_summation_bounds(const WeightMatrix& w, const std::vector<float>& x, int T,
                                    const std::vector<float>& gpu, const std::vector<float>& cpu,
                                    double device_chain) {
  std::vector<double> exact, magnitude;
  exact_products(w, x, T, &exact, &magnitude);
  const double device_bound = gamma_bound(device_chain);
  const double cpu_bound = gamma_bound(w.cols) + device_bound;
  int failures = 0;
  for (size_t i = 0; i < gpu.size() && failures < 5; ++i) {
    const double s = magnitude[i];
    if (std::abs(gpu[i] - exact[i]) > device_bound * s ||
        std::abs(double(gpu[i]) - cpu[i]) > cpu_bound * s) {
      ADD_FAILURE() << "output " << i << ": device " << gpu[i] << ", cpu " << cpu[i] << ", exact "
                    << exact[i] << ", S " << s;
      ++failures;
    }
  }
}

}  // namespace qmlx::vulkan::testing
