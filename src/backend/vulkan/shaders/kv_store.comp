#version 450
// Appends K or V rows to a cache as kernels/kv_row.h stores them (kv_store.h): one invocation
// per head row of D floats, written as f32, f16, bf16 (both rounded to nearest even, as the
// CPU's _cvtss_sh and float_to_bf16 do) or int8 codes followed by their float32 scale.
layout(local_size_x = 64) in;

layout(constant_id = 0) const uint KV_TYPE = 0u;  // KvType: 0 f32, 1 f16, 2 bf16, 3 int8

layout(std430, binding = 0) readonly buffer Source { float src[]; };
layout(std430, binding = 1) writeonly buffer Cache { uint dst[]; };

layout(push_constant) uniform Push {
  uint head_rows;   // rows * heads
  uint D;
  uint src_base;    // floats before the first row's first head
  uint dst_base;    // words before the first row's first head
  uint head_words;  // words one head row takes in the cache
  float int8_max;   // 127, given at run time: a constant divisor may become a multiply by its
                    // reciprocal, which is not the CPU's correctly rounded division
} p;

// IEEE binary16, round to nearest even; NaN stays NaN (quiet), overflow goes to infinity.
uint to_f16(float f) {
  const uint x = floatBitsToUint(f);
  const uint sign = (x >> 16) & 0x8000u;
  const uint e = (x >> 23) & 0xffu;
  const uint m = x & 0x7fffffu;
  if (e == 255u) return sign | 0x7c00u | (m != 0u ? (0x200u | (m >> 13)) : 0u);
  const int exponent = int(e) - 112;  // rebiased from 127 to 15
  if (exponent >= 31) return sign | 0x7c00u;
  if (exponent <= 0) {
    if (exponent < -10) return sign;
    const uint full = m | 0x800000u;
    const uint shift = uint(14 - exponent);
    const uint rounded = (full + (1u << (shift - 1u)) - 1u + ((full >> shift) & 1u)) >> shift;
    return sign | rounded;
  }
  uint h = sign | (uint(exponent) << 10) | (m >> 13);
  const uint rest = m & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u) != 0u)) h += 1u;
  return h;
}

uint to_bf16(float f) {
  uint bits = floatBitsToUint(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return (bits >> 16) | 0x40u;
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return bits >> 16;
}

void main() {
  const uint row = gl_GlobalInvocationID.x;
  if (row >= p.head_rows) return;
  const uint in0 = p.src_base + row * p.D;
  const uint out0 = p.dst_base + row * p.head_words;
  if (KV_TYPE == 0u) {
    for (uint i = 0u; i < p.D; ++i) dst[out0 + i] = floatBitsToUint(src[in0 + i]);
  } else if (KV_TYPE == 1u || KV_TYPE == 2u) {
    for (uint i = 0u; i < p.D; i += 2u) {
      const float a = src[in0 + i], b = src[in0 + i + 1u];
      dst[out0 + i / 2u] = KV_TYPE == 1u ? (to_f16(a) | (to_f16(b) << 16))
                                         : (to_bf16(a) | (to_bf16(b) << 16));
    }
  } else {
    float max_abs = 0.0;
    for (uint i = 0u; i < p.D; ++i) max_abs = max(max_abs, abs(src[in0 + i]));
    precise const float scale = max_abs / p.int8_max;
    for (uint i = 0u; i < p.D; i += 4u) {
      uint word = 0u;
      for (uint j = 0u; j < 4u; ++j) {
        precise const float quotient = src[in0 + i + j] / scale;
        const float q = scale > 0.0 ? clamp(roundEven(quotient), -127.0, 127.0) : 0.0;
        word |= (uint(int(q)) & 0xffu) << (8u * j);
      }
      dst[out0 + i / 4u] = word;
    }
    dst[out0 + p.D / 4u] = floatBitsToUint(scale);
  }
}
