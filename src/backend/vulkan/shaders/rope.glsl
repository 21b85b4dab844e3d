// The body of rope.comp and rope_exact_fma.comp (fma.glsl says why two).
// Rotate-half RoPE of one row (one workgroup) of `heads` heads at the row's position: a row
// of the position table, or (a negative index -1 - j) row j of the call's own angles, which
// hold the M-RoPE angles of image rows (rope.h). For each
// pair (i, i + half) of a head's first 2 * half dimensions, with c, s the table's cos and sin,
//   lo' = lo c - hi s,  hi' = hi c + lo s.
// GCC compiles kernels/rope.cpp's expressions (vector loop and scalar tail alike) as
//   lo' = fma(lo, c, -(hi s)),  hi' = fma(hi, c, lo s),
// one product rounded and one fused; the shader does the same, so it is bit-identical.
#include "fma.glsl"

layout(local_size_x = 64) in;

layout(std430, binding = 0) buffer Rows { float x[]; };
layout(std430, binding = 1) readonly buffer Positions { int position[]; };
layout(std430, binding = 2) readonly buffer Angles { float angles[]; };  // [pos][cos | sin]
layout(std430, binding = 3) readonly buffer Own { float own_angles[]; };  // [j][cos | sin]

layout(push_constant) uniform Push {
  uint heads;
  uint head_dim;
  uint half_dim;       // rot_dim / 2
  uint x_base;         // floats before row 0 of this dispatch
  uint position_base;  // ints before row 0's position
} p;

void main() {
  const uint row = gl_WorkGroupID.x;
  const int index = position[p.position_base + row];
  const bool own = index < 0;
  const uint table_row = uint(own ? -1 - index : index) * 2u * p.half_dim;
  const uint x_row = p.x_base + row * p.heads * p.head_dim;
  for (uint j = gl_LocalInvocationID.x; j < p.heads * p.half_dim; j += 64u) {
    const uint head = j / p.half_dim, i = j % p.half_dim;
    const uint at = x_row + head * p.head_dim + i;
    const float c = own ? own_angles[table_row + i] : angles[table_row + i];
    const float s = own ? own_angles[table_row + p.half_dim + i] : angles[table_row + p.half_dim + i];
    const float lo = x[at], hi = x[at + p.half_dim];
    precise float hi_s = hi * s;
    precise float lo_s = lo * s;
    x[at] = FMA(lo, c, -hi_s);
    x[at + p.half_dim] = FMA(hi, c, lo_s);
  }
}
