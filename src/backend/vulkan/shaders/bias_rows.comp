#version 450
// y[r][c] += bias[c] over `rows` rows of n floats: the bias of a Linear layer after its
// matmul, one float addition per element as kernels/biased_matmul.cpp adds it (bit-identical
// everywhere).
layout(local_size_x = 64) in;

layout(std430, binding = 0) buffer Rows { float y[]; };
layout(std430, binding = 1) readonly buffer Bias { float bias[]; };

layout(push_constant) uniform Push {
  uint rows;    // in this dispatch
  uint n;       // columns
  uint y_base;  // floats before row 0 of this dispatch
} p;

void main() {
  const uint row = gl_WorkGroupID.y;
  for (uint c = gl_GlobalInvocationID.x; c < p.n; c += gl_NumWorkGroups.x * 64u) {
    const uint at = p.y_base + row * p.n + c;
    precise float r = y[at] + bias[c];
    y[at] = r;
  }
}
