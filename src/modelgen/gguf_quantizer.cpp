#include "modelgen/gguf_quantizer.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>

#include "base/error.h"
#include "modelgen/tensor_dtype.h"

namespace qmlx::modelgen {
namespace {

struct QuantInfo {
  GgufQuant type;
  const char* name;
  int block_elems;
  size_t block_bytes;
};

constexpr QuantInfo kQuants[] = {
    {GgufQuant::kF32, "F32", 1, 4},       {GgufQuant::kF16, "F16", 1, 2},
    {GgufQuant::kBF16, "BF16", 1, 2},     {GgufQuant::kQ4_0, "Q4_0", 32, 18},
    {GgufQuant::kQ4_1, "Q4_1", 32, 20},   {GgufQuant::kQ5_0, "Q5_0", 32, 22},
    {GgufQuant::kQ5_1, "Q5_1", 32, 24},   {GgufQuant::kQ8_0, "Q8_0", 32, 34},
    {GgufQuant::kQ2_K, "Q2_K", 256, 84},  {GgufQuant::kQ3_K, "Q3_K", 256, 110},
    {GgufQuant::kQ4_K, "Q4_K", 256, 144}, {GgufQuant::kQ5_K, "Q5_K", 256, 176},
    {GgufQuant::kQ6_K, "Q6_K", 256, 210},
};

const QuantInfo& info(GgufQuant type) {
  for (const QuantInfo& q : kQuants)
    if (q.type == type) return q;
  throw Error("unknown GGUF quantization type");
}

int nearest_int(float v) { return int(std::lround(v)); }

void put_half(uint8_t* out, float v) {
  const uint16_t h = float_to_f16(v);
  std::memcpy(out, &h, 2);
}
float half_value(float v) { return f16_to_float(float_to_f16(v)); }

// Packs 32 codes (< 16 each) as ggml does: byte j = code j | code (j + 16) << 4.
void pack_low_high(const int* codes, uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = uint8_t((codes[j] & 15) | ((codes[j + 16] & 15) << 4));
}

// The value of largest magnitude, with its sign (ggml's symmetric formats scale by it).
float signed_max(const float* x, int n) {
  float amax = 0, max = 0;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  return max;
}

// Q4_0 / Q5_0: d = max / -2^(bits-1), code = clamp(trunc(x / d + 2^(bits-1) + 0.5)).
void quantize_symmetric_32(const float* x, uint8_t* out, int bits) {
  const int half = 1 << (bits - 1), top = (1 << bits) - 1;
  const float d = signed_max(x, 32) / -half;
  const float id = d ? 1.0f / d : 0.0f;
  put_half(out, d);
  int codes[32];
  for (int j = 0; j < 32; ++j) codes[j] = std::min(top, int(x[j] * id + half + 0.5f));
  if (bits == 4) {
    pack_low_high(codes, out + 2);
    return;
  }
  uint32_t qh = 0;
  for (int j = 0; j < 32; ++j) qh |= uint32_t((codes[j] >> 4) & 1) << j;
  std::memcpy(out + 2, &qh, 4);
  pack_low_high(codes, out + 6);
}

// Q4_1 / Q5_1: d = (max - min) / (2^bits - 1), m = min, code = round((x - min) / d).
void quantize_affine_32(const float* x, uint8_t* out, int bits) {
  const int top = (1 << bits) - 1;
  const float lo = *std::min_element(x, x + 32), hi = *std::max_element(x, x + 32);
  const float d = (hi - lo) / top;
  const float id = d ? 1.0f / d : 0.0f;
  put_half(out, d);
  put_half(out + 2, lo);
  int codes[32];
  for (int j = 0; j < 32; ++j) codes[j] = std::min(top, int((x[j] - lo) * id + 0.5f));
  if (bits == 4) {
    pack_low_high(codes, out + 4);
    return;
  }
  uint32_t qh = 0;
  for (int j = 0; j < 32; ++j) qh |= uint32_t((codes[j] >> 4) & 1) << j;
  std::memcpy(out + 4, &qh, 4);
  pack_low_high(codes, out + 8);
}

void quantize_q8_0(const float* x, uint8_t* out) {
  float amax = 0;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127, id = d ? 1.0f / d : 0.0f;
  put_half(out, d);
  for (int j = 0; j < 32; ++j) out[2 + j] = uint8_t(int8_t(nearest_int(x[j] * id)));
}

// --- K-quants. Sub-block scales (and mins) are themselves quantized against one f16 super
// scale; codes are then chosen against the reconstructed sub-block scale.

// Asymmetric sub-block: x ~ scale * code - min_value, code in [0, top], min_value >= 0.
struct ScaleMin {
  float scale, min;
};
ScaleMin sub_block_scale_min(const float* x, int n, int top) {
  float lo = std::min(0.0f, *std::min_element(x, x + n));
  float hi = *std::max_element(x, x + n);
  return {(hi - lo) / top, -lo};
}

// Codes for reconstructed scale d and min m: round((x + m) / d) clamped to [0, top].
void affine_codes(const float* x, int n, float d, float m, int top, int* codes) {
  for (int i = 0; i < n; ++i) codes[i] = d ? std::clamp(nearest_int((x[i] + m) / d), 0, top) : 0;
}

// Q4_K / Q5_K: 8 sub-blocks of 32, 6-bit scales and mins.
void quantize_q45_k(const float* x, uint8_t* out, int bits) {
  const int top = (1 << bits) - 1;
  ScaleMin sm[8];
  float max_scale = 0, max_min = 0;
  for (int s = 0; s < 8; ++s) {
    sm[s] = sub_block_scale_min(x + 32 * s, 32, top);
    max_scale = std::max(max_scale, sm[s].scale);
    max_min = std::max(max_min, sm[s].min);
  }
  const float d = half_value(max_scale / 63), dmin = half_value(max_min / 63);
  put_half(out, d);
  put_half(out + 2, dmin);
  int ls[8], lm[8];
  for (int s = 0; s < 8; ++s) {
    ls[s] = d ? std::clamp(nearest_int(sm[s].scale / d), 0, 63) : 0;
    lm[s] = dmin ? std::clamp(nearest_int(sm[s].min / dmin), 0, 63) : 0;
  }
  // 12-byte packing: sub-blocks 0-3 in the low 6 bits of bytes 0-3 / 4-7; sub-blocks 4-7 put
  // their low nibbles in bytes 8-11 and their top 2 bits in the top of bytes 0-3 / 4-7.
  uint8_t* packed = out + 4;
  for (int s = 0; s < 4; ++s) {
    packed[s] = uint8_t(ls[s] | ((ls[s + 4] >> 4) << 6));
    packed[s + 4] = uint8_t(lm[s] | ((lm[s + 4] >> 4) << 6));
    packed[s + 8] = uint8_t((ls[s + 4] & 15) | ((lm[s + 4] & 15) << 4));
  }
  int codes[256];
  for (int s = 0; s < 8; ++s)
    affine_codes(x + 32 * s, 32, d * ls[s], dmin * lm[s], top, codes + 32 * s);
  uint8_t* qh = out + 16;
  uint8_t* qs = out + (bits == 5 ? 48 : 16);
  if (bits == 5) std::memset(qh, 0, 32);
  // Chunk c of 64 values: low nibbles from sub-block 2c, high nibbles from 2c + 1.
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) {
      const int a = codes[64 * c + l], b = codes[64 * c + 32 + l];
      qs[32 * c + l] = uint8_t((a & 15) | ((b & 15) << 4));
      if (bits == 5) qh[l] |= uint8_t(((a >> 4) << (2 * c)) | ((b >> 4) << (2 * c + 1)));
    }
}

// Q2_K: 16 sub-blocks of 16, 4-bit scales and mins, 2-bit codes.
void quantize_q2_k(const float* x, uint8_t* out) {
  ScaleMin sm[16];
  float max_scale = 0, max_min = 0;
  for (int s = 0; s < 16; ++s) {
    sm[s] = sub_block_scale_min(x + 16 * s, 16, 3);
    max_scale = std::max(max_scale, sm[s].scale);
    max_min = std::max(max_min, sm[s].min);
  }
  const float d = half_value(max_scale / 15), dmin = half_value(max_min / 15);
  int codes[256];
  for (int s = 0; s < 16; ++s) {
    const int ls = d ? std::clamp(nearest_int(sm[s].scale / d), 0, 15) : 0;
    const int lm = dmin ? std::clamp(nearest_int(sm[s].min / dmin), 0, 15) : 0;
    out[s] = uint8_t(ls | (lm << 4));
    affine_codes(x + 16 * s, 16, d * ls, dmin * lm, 3, codes + 16 * s);
  }
  // Value v: half v / 128, bit-plane (v % 128) / 32, byte 32 * half + v % 32.
  uint8_t* qs = out + 16;
  std::memset(qs, 0, 64);
  for (int v = 0; v < 256; ++v)
    qs[32 * (v / 128) + v % 32] |= uint8_t(codes[v] << (2 * ((v % 128) / 32)));
  put_half(out + 80, d);
  put_half(out + 82, dmin);
}

// Symmetric sub-block scales quantized as signed integers against one super scale d:
// scale_i ~ d * l_i with l_i in [-limit, limit - 1], the largest magnitude at -limit.
float quantize_signed_scales(const float* scales, int n, int limit, int* l) {
  const float max = signed_max(scales, n);
  if (max == 0) {
    std::fill(l, l + n, 0);
    return 0;
  }
  const float iscale = -limit / max;
  for (int i = 0; i < n; ++i) l[i] = std::min(limit - 1, nearest_int(iscale * scales[i]));
  return half_value(1 / iscale);
}

// Q3_K: 16 sub-blocks of 16, 6-bit signed scales, 3-bit codes (-4..3).
void quantize_q3_k(const float* x, uint8_t* out) {
  float scales[16];
  for (int s = 0; s < 16; ++s) scales[s] = signed_max(x + 16 * s, 16) / -4;
  int l[16];
  const float d = quantize_signed_scales(scales, 16, 32, l);
  int codes[256];
  for (int s = 0; s < 16; ++s) {
    const float dl = d * l[s];
    for (int i = 0; i < 16; ++i)
      codes[16 * s + i] = dl ? std::clamp(nearest_int(x[16 * s + i] / dl), -4, 3) + 4 : 4;
  }
  uint8_t* hmask = out;
  uint8_t* qs = out + 32;
  uint8_t* packed = out + 96;
  std::memset(out, 0, 108);
  for (int v = 0; v < 256; ++v) {
    const int c = codes[v];
    qs[32 * (v / 128) + v % 32] |= uint8_t((c & 3) << (2 * ((v % 128) / 32)));
    if (c > 3) hmask[v % 32] |= uint8_t(1 << (v / 32));
  }
  for (int s = 0; s < 16; ++s) {
    const int u = l[s] + 32;  // 6 bits
    packed[s % 8] |= uint8_t((u & 15) << (s < 8 ? 0 : 4));
    packed[8 + s % 4] |= uint8_t((u >> 4) << (2 * (s / 4)));
  }
  put_half(out + 108, d);
}

// Q6_K: 16 sub-blocks of 16, int8 scales, 6-bit codes (-32..31).
void quantize_q6_k(const float* x, uint8_t* out) {
  float scales[16];
  for (int s = 0; s < 16; ++s) scales[s] = signed_max(x + 16 * s, 16) / -32;
  int l[16];
  const float d = quantize_signed_scales(scales, 16, 128, l);
  int codes[256];
  for (int s = 0; s < 16; ++s) {
    const float dl = d * l[s];
    for (int i = 0; i < 16; ++i)
      codes[16 * s + i] = dl ? std::clamp(nearest_int(x[16 * s + i] / dl), -32, 31) + 32 : 32;
  }
  uint8_t* ql = out;
  uint8_t* qh = out + 128;
  std::memset(out, 0, 192);
  // Half h of 128 values: value 32k + l (k < 4) -> nibble k / 2 of ql[64h + l + 32 (k % 2)],
  // bits 2k..2k+1 of qh[32h + l].
  for (int v = 0; v < 256; ++v) {
    const int h = v / 128, k = (v % 128) / 32, i = v % 32, c = codes[v];
    ql[64 * h + i + 32 * (k % 2)] |= uint8_t((c & 15) << (4 * (k / 2)));
    qh[32 * h + i] |= uint8_t((c >> 4) << (2 * k));
  }
  for (int s = 0; s < 16; ++s) out[192 + s] = uint8_t(int8_t(l[s]));
  put_half(out + 208, d);
}

void quantize_block(GgufQuant type, const float* x, uint8_t* out) {
  switch (type) {
    case GgufQuant::kQ4_0:
      return quantize_symmetric_32(x, out, 4);
    case GgufQuant::kQ5_0:
      return quantize_symmetric_32(x, out, 5);
    case GgufQuant::kQ4_1:
      return quantize_affine_32(x, out, 4);
    case GgufQuant::kQ5_1:
      return quantize_affine_32(x, out, 5);
    case GgufQuant::kQ8_0:
      return quantize_q8_0(x, out);
    case GgufQuant::kQ2_K:
      return quantize_q2_k(x, out);
    case GgufQuant::kQ3_K:
      return quantize_q3_k(x, out);
    case GgufQuant::kQ4_K:
      return quantize_q45_k(x, out, 4);
    case GgufQuant::kQ5_K:
      return quantize_q45_k(x, out, 5);
    case GgufQuant::kQ6_K:
      return quantize_q6_k(x, out);
    default:
      return;
  }
}

}  // namespace

std::optional<GgufQuant> parse_gguf_quant(const std::string& name) {
  std::string upper = name;
  for (char& c : upper) c = char(std::toupper(static_cast<unsigned char>(c)));
  for (const QuantInfo& q : kQuants)
    if (upper == q.name) return q.type;
  return std::nullopt;
}

const char* gguf_quant_name(GgufQuant type) { return info(type).name; }
int gguf_quant_block_elems(GgufQuant type) { return info(type).block_elems; }
size_t gguf_quant_block_bytes(GgufQuant type) { return info(type).block_bytes; }
size_t gguf_quant_bytes(GgufQuant type, size_t n) {
  return n / gguf_quant_block_elems(type) * gguf_quant_block_bytes(type);
}

std::vector<uint8_t> gguf_quantize(GgufQuant type, const float* values, size_t n) {
  const size_t elems = gguf_quant_block_elems(type), bytes = gguf_quant_block_bytes(type);
  if (n % elems != 0)
    throw Error(std::string("GGUF ") + gguf_quant_name(type) + " needs a multiple of " +
                std::to_string(elems) + " values");
  std::vector<uint8_t> out(n / elems * bytes);
  if (type == GgufQuant::kF32 || type == GgufQuant::kF16 || type == GgufQuant::kBF16) {
    const TensorDType dtype = type == GgufQuant::kF32   ? TensorDType::kF32
                              : type == GgufQuant::kF16 ? TensorDType::kF16
                                                        : TensorDType::kBF16;
    for (size_t i = 0; i < n; ++i) store_float(values[i], dtype, out.data() + i * bytes);
    return out;
  }
  for (size_t b = 0; b < n / elems; ++b)
    quantize_block(type, values + b * elems, out.data() + b * bytes);
  return out;
}

}  // namespace qmlx::modelgen
