// The sound error bounds the matmul tests hold device results to (matmul_test.cpp says why):
// any order of summing K products with fma is within gamma(n) * S of the exact sum, where
// S = sum |w_k x_k|, gamma(n) = n u / (1 - n u), u = 2^-24 and n the longest chain of roundings
// a term goes through. So a device result whose chains are `device_chain` long must lie within
// gamma(device_chain) * S of the exact (double) product, and within
// (gamma(cols) + gamma(device_chain)) * S of the CPU's.
#pragma once

#include <vector>

#include "kernels/weight_matrix.h"

namespace qmlx::vulkan::testing {

double gamma_bound(double n);

// Checks gpu and cpu ([T][w.rows] results of w over x) against each other and the exact
// product within the bounds above; reports at most five failures.
void expect_within_summation_bounds(const WeightMatrix& w, const std::vector<float>& x, int T,
                                    const std::vector<float>& gpu, const std::vector<float>& cpu,
                                    double device_chain);

}  // namespace qmlx::vulkan::testing
