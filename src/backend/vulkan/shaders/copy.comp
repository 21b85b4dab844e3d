#version 450
// dst = src, 16 bytes per invocation per step over a grid-stride loop: the simplest kernel
// that is bound by memory bandwidth, to measure a device's (copy.h).
layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer Source { uvec4 src[]; };
layout(std430, binding = 1) writeonly buffer Destination { uvec4 dst[]; };

layout(push_constant) uniform Push {
  uint count;     // 16-byte elements
  uint src_base;  // elements before the first one to copy
  uint dst_base;
} p;

void main() {
  const uint stride = gl_NumWorkGroups.x * 64u;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride)
    dst[p.dst_base + i] = src[p.src_base + i];
}
