// FMA(a, b, c): a * b + c rounded once, as the CPU kernels' fused multiply-adds compute it.
// Vulkan lets a driver compute GLSL's fma() as a multiply and an add rounded separately, and
// some do (lavapipe lowers every fma so). For those the *_exact_fma shader variants define
// QMLX_EXACT_FMA and get a correctly rounded fma from float64 arithmetic instead: the product
// of two floats is exact in a double, the sum is rounded to odd (two-sum, then one step to the
// odd neighbour when inexact), and rounding that to float gives the correctly rounded result
// (Boldo and Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms using
// rounding to odd", 2008). Valid for results in the normal float range. The context picks the
// variant by testing the device's fma (Context::fma_mode).
#ifdef QMLX_EXACT_FMA
float exact_fma(float a, float b, float c) {
  precise double p = double(a) * double(b);
  precise double z = double(c);
  precise double s = p + z;
  precise double t = s - p;
  precise double e = (p - (s - t)) + (z - t);  // s + e == p + z exactly
  uvec2 w = unpackDouble2x32(s);              // w.x: the low word of the significand
  if (e != 0.0 && (w.x & 1u) == 0u) {
    // Inexact and even: the odd neighbour on the exact value's side.
    if ((e > 0.0) == (s > 0.0)) {
      w.x += 1u;  // even, so no carry
    } else {
      if (w.x == 0u) w.y -= 1u;
      w.x -= 1u;
    }
    s = packDouble2x32(w);
  }
  return float(s);
}
#define FMA(a, b, c) exact_fma(a, b, c)
#else
#define FMA(a, b, c) fma(a, b, c)
#endif
