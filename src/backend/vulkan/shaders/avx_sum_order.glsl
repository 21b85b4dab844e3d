// The order in which the CPU kernels add up the 8 lanes of an AVX vector (simd::hsum in
// kernels/simd.h): the upper half onto the lower, then lanes 2-3 onto 0-1, then lane 1 onto 0.
// Kernels that follow the CPU's accumulation lane for lane finish with this to get its bits.
float avx_hsum(float v[8]) {
  precise float s = ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7]));
  return s;
}
