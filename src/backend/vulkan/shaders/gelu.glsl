// The body of gelu.comp and gelu_exact_fma.comp (fma.glsl says why two). In place over
// `count` floats:
//   MODE 0, gelu_tanh: activations.cpp's gelu8 step for step, x / (1 + e^(-2y)) with
//     y = sqrt(2/pi) fma(0.044715 x, x x, x) and avx_exp (the CPU runs every element, tail
//     included, through its 8-lane form), so it is bit-identical where FMA is exact (lavapipe);
//   MODE 1, gelu_erf: 0.5 x (1 + erf(x / sqrt(2))). GLSL has no erf and the CPU's is glibc's
//     erff: 1 + erf(z) is computed as erfc(-z) (z < 0, no cancellation) or 2 - erfc(z), erfc
//     by Numerical Recipes' Chebyshev fit t exp(-z^2 + P(t)), t = 1 / (1 + z/2), whose relative
//     error is below 1.2e-7, plus the device's exp: within a few ulp of the CPU, not bit for bit.
#include "fma.glsl"
#include "avx_exp.glsl"

layout(local_size_x = 64) in;

layout(constant_id = 0) const uint MODE = 0;

layout(std430, binding = 0) buffer Target { float a[]; };

layout(push_constant) uniform Push {
  uint count;   // elements in this dispatch
  uint a_base;  // floats before element 0 in the binding
} p;

float gelu_tanh(float x) {
  precise float x2 = x * x;
  precise float cx = 0.044715 * x;
  precise float inner = FMA(cx, x2, x);
  precise float e = avx_exp(-1.5957691216057308 * inner);
  precise float y = x / (1.0 + e);
  return y;
}

// erfc(z) for z >= 0.
float erfc_nonnegative(float z) {
  precise float t = 1.0 / (1.0 + 0.5 * z);
  precise float poly =
      -1.26551223 +
      t * (1.00002368 +
           t * (0.37409196 +
                t * (0.09678418 +
                     t * (-0.18628806 +
                          t * (0.27886807 +
                               t * (-1.13520398 +
                                    t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
  precise float r = t * exp(poly - z * z);
  return r;
}

float gelu_erf(float x) {
  precise float z = x * 0.70710678118654752;
  precise float one_plus_erf = z < 0.0 ? erfc_nonnegative(-z) : 2.0 - erfc_nonnegative(z);
  precise float y = 0.5 * x * one_plus_erf;
  return y;
}

void main() {
  const uint stride = gl_NumWorkGroups.x * 64u;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) {
    const float x = a[p.a_base + i];
    a[p.a_base + i] = MODE == 0u ? gelu_tanh(x) : gelu_erf(x);
  }
}
