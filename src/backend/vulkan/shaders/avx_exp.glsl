// The CPU kernels' two exponentials, for shaders that follow their arithmetic.
//  - avx_exp: simd::exp in kernels/simd.h (Cephes' expf over 8 lanes), step for step: the
//    same clamps, the same round-to-nearest-even of x / ln 2, the same fma chain and the same
//    power of two, so it is bit-identical to it wherever FMA is correctly rounded (fma.glsl).
//  - libm_exp: where the CPU calls std::exp (scalar loops and tails). The device's exp() is
//    not glibc's expf, so results there differ by a few ulp; each caller's test says how many.
// The including shader includes fma.glsl first.
#ifndef QMLX_AVX_EXP_GLSL
#define QMLX_AVX_EXP_GLSL

float avx_exp(float x) {
  // Below -87 the CPU answers exactly 0 (the attention's masked scores rely on it).
  const bool underflow = x < -87.0;
  x = min(max(x, -87.0), 88.0);
  precise float n = roundEven(x * 1.44269504088896341);
  precise float r = FMA(-n, 0.693359375, x);
  r = FMA(-n, -2.12194440e-4, r);
  precise float p = 1.9875691500e-4;
  p = FMA(p, r, 1.3981999507e-3);
  p = FMA(p, r, 8.3334519073e-3);
  p = FMA(p, r, 4.1665795894e-2);
  p = FMA(p, r, 1.6666665459e-1);
  p = FMA(p, r, 5.0000001201e-1);
  p = FMA(p, r * r, r + 1.0);
  const float power = intBitsToFloat((int(n) + 127) << 23);
  precise float result = p * power;
  return underflow ? 0.0 : result;
}

// silu over a full 8-lane block of the CPU (activations.cpp's silu8): x / (1 + e^-x).
float avx_silu(float x) {
  precise float e = avx_exp(0.0 - x);
  precise float y = x / (1.0 + e);
  return y;
}

float libm_exp(float x) { return exp(x); }

// activations.h's scalar sigmoid and silu: 1 / (1 + e^-x) and x * sigmoid(x).
float scalar_sigmoid(float x) {
  precise float s = 1.0 / (1.0 + libm_exp(-x));
  return s;
}

float scalar_silu(float x) {
  precise float y = x * scalar_sigmoid(x);
  return y;
}

#endif
