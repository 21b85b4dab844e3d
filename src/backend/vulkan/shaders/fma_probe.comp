#version 450
// out[i] = fma(a[i], b[i], c[i]) with GLSL's fma(), for Context::fma_mode to compare with a
// correctly rounded fma on the host: tells whether this device fuses it.
layout(local_size_x = 1) in;

layout(std430, binding = 0) buffer Data { float v[]; };  // a, b, c, out for each of n

layout(push_constant) uniform Push { uint n; } p;

void main() {
  for (uint i = 0u; i < p.n; ++i) {
    precise float r = fma(v[4u * i], v[4u * i + 1u], v[4u * i + 2u]);
    v[4u * i + 3u] = r;
  }
}
