// The sum of squares of n floats of `x` from `row` in vec::sum_squares' order (kernels/vec.cpp:
// vec::dot of x with itself): 16 lanes of fma chains over blocks of 16 (its two 8-wide AVX
// accumulators), one more 8-wide step, the accumulators added lane for lane, the AVX
// horizontal sum, then the scalar tail. Shared by the norms. The including shader declares
// local_size_x = 16 and a buffer array `x`, includes fma.glsl, and calls it from every
// invocation; every invocation gets the sum.
#include "avx_sum_order.glsl"

shared float lane_squares[16];
shared float row_squares;

float row_sum_squares(uint row, uint n) {
  const uint lane = gl_LocalInvocationID.x;
  const uint blocks16 = n & ~15u;
  precise float acc = 0.0;
  for (uint i = 0u; i < blocks16; i += 16u) acc = FMA(x[row + i + lane], x[row + i + lane], acc);
  const bool block8 = n - blocks16 >= 8u;
  if (block8 && lane < 8u) acc = FMA(x[row + blocks16 + lane], x[row + blocks16 + lane], acc);
  lane_squares[lane] = acc;
  barrier();
  if (lane == 0u) {
    precise float v[8];
    for (uint j = 0u; j < 8u; ++j) v[j] = lane_squares[j] + lane_squares[j + 8u];
    precise float s = avx_hsum(v);
    for (uint i = blocks16 + (block8 ? 8u : 0u); i < n; ++i) s = FMA(x[row + i], x[row + i], s);
    row_squares = s;
  }
  barrier();
  return row_squares;
}
