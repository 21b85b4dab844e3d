#include "kernels/gguf_affine.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "kernels/scalar_type.h"

namespace qmlx {
namespace {

constexpr int kQK = 32;    // values per block of the 32-value formats
constexpr int kQKK = 256;  // values per K-quant super-block

// One block's values as unsigned codes, and each group's scale and bias, in value order. The
// layouts are ggml's (gguf_blocks.cpp decodes the same bytes to floats; the tests hold the two
// to each other value for value).
struct BlockCodes {
  uint8_t q[kQKK];
  float scale[kQKK / 16], bias[kQKK / 16];
};

void nibbles(const uint8_t* qs, uint8_t* q) {  // byte j: value j low, value j + 16 high
  for (int j = 0; j < kQK / 2; ++j) {
    q[j] = qs[j] & 0x0f;
    q[j + kQK / 2] = qs[j] >> 4;
  }
}

void five_bit_codes(const uint8_t* qh_bytes, const uint8_t* qs, uint8_t* q) {
  int codes[kQK];
  gguf_five_bit_codes(qh_bytes, qs, codes);
  std::copy(codes, codes + kQK, q);
}

void codes_q4_0(const uint8_t* b, BlockCodes& c) {
  const float d = gguf_half_at(b);
  nibbles(b + 2, c.q);
  c.scale[0] = d, c.bias[0] = -8 * d;
}

void codes_q4_1(const uint8_t* b, BlockCodes& c) {
  nibbles(b + 4, c.q);
  c.scale[0] = gguf_half_at(b), c.bias[0] = gguf_half_at(b + 2);
}

void codes_q5_0(const uint8_t* b, BlockCodes& c) {
  const float d = gguf_half_at(b);
  five_bit_codes(b + 2, b + 6, c.q);
  c.scale[0] = d, c.bias[0] = -16 * d;
}

void codes_q5_1(const uint8_t* b, BlockCodes& c) {
  five_bit_codes(b + 4, b + 8, c.q);
  c.scale[0] = gguf_half_at(b), c.bias[0] = gguf_half_at(b + 2);
}

void codes_q8_0(const uint8_t* b, BlockCodes& c) {
  q8_0_block_as_affine(b, c.q, c.scale[0], c.bias[0]);
}

// scales[16] (scale low nibble, min high nibble), qs[64]: 2 halves of 4 bit-planes, each plane
// two groups of 16; then d, dmin.
void codes_q2_k(const uint8_t* b, BlockCodes& c) {
  const uint8_t* q = b + 16;
  const float d = gguf_half_at(b + 80), dmin = gguf_half_at(b + 82);
  int g = 0, v = 0;
  for (int half = 0; half < 2; ++half, q += 32)
    for (int shift = 0; shift < 8; shift += 2)
      for (int part = 0; part < 2; ++part, ++g) {
        c.scale[g] = d * (b[g] & 0x0f), c.bias[g] = -(dmin * (b[g] >> 4));
        for (int l = 0; l < 16; ++l) c.q[v++] = (q[l + 16 * part] >> shift) & 3;
      }
}

// hmask[32], qs[64], scales[12] (sixteen 6-bit scales biased by 32), d. Code = low 2 bits, less
// 4 where the hmask bit is clear: q = low + 4 * bit, bias -4 * scale.
void codes_q3_k(const uint8_t* b, BlockCodes& c) {
  const uint8_t* hmask = b;
  const uint8_t* q = b + 32;
  const uint8_t* packed = b + 96;
  const float d = gguf_half_at(b + 108);
  int scales[16];
  gguf_q3_k_scales(packed, scales);
  for (int i = 0; i < 16; ++i) {
    const float dl = d * scales[i];
    c.scale[i] = dl, c.bias[i] = -4 * dl;
  }
  int v = 0;
  uint8_t m = 1;
  for (int half = 0; half < 2; ++half, q += 32)
    for (int shift = 0; shift < 8; shift += 2, m <<= 1)
      for (int l = 0; l < 32; ++l)
        c.q[v++] = uint8_t(((q[l] >> shift) & 3) | ((hmask[l] & m) ? 4 : 0));
}

// d, dmin, scales[12] (8 six-bit scales and mins), [qh[32],] qs[128]: 4 chunks of 64 values,
// low nibbles then high nibbles; Q5_K's fifth bit of value l of group g is bit g of qh[l].
void codes_q4_q5_k(const uint8_t* b, BlockCodes& c, bool five) {
  const float d = gguf_half_at(b), dmin = gguf_half_at(b + 2);
  const uint8_t* packed = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* q = b + (five ? 48 : 16);
  int v = 0;
  for (int chunk = 0; chunk < 4; ++chunk, q += 32)
    for (int nib = 0; nib < 2; ++nib) {
      const int g = 2 * chunk + nib;
      int sc, mn;
      gguf_scale_min_k4(g, packed, &sc, &mn);
      c.scale[g] = d * sc, c.bias[g] = -(dmin * mn);
      for (int l = 0; l < 32; ++l)
        c.q[v++] = uint8_t(((q[l] >> (4 * nib)) & 0x0f) | (five ? ((qh[l] >> g) & 1) << 4 : 0));
    }
}

// ql[128], qh[64], int8 scales[16], d: value l + 32 k of a half takes nibble k / 2 of
// ql[l + 32 (k % 2)] and bits 2k, 2k + 1 of qh[l]; codes biased by 32.
void codes_q6_k(const uint8_t* b, BlockCodes& c) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = gguf_half_at(b + 208);
  for (int g = 0; g < 16; ++g) {
    const float dl = d * sc[g];
    c.scale[g] = dl, c.bias[g] = -32 * dl;
  }
  for (int half = 0; half < 2; ++half, ql += 64, qh += 32)
    for (int l = 0; l < 32; ++l)
      for (int k = 0; k < 4; ++k) {
        const int low = (ql[l + 32 * (k % 2)] >> (4 * (k / 2))) & 0x0f;
        c.q[128 * half + l + 32 * k] = uint8_t(low | (((qh[l] >> (2 * k)) & 3) << 4));
      }
}

struct Rewrite {
  GgufType type;
  int bits, group_size;
  void (*codes)(const uint8_t*, BlockCodes&);
};

constexpr Rewrite kRewrites[] = {
    {GgufType::kQ4_0, 4, 32, codes_q4_0},
    {GgufType::kQ4_1, 4, 32, codes_q4_1},
    {GgufType::kQ5_0, 5, 32, codes_q5_0},
    {GgufType::kQ5_1, 5, 32, codes_q5_1},
    {GgufType::kQ8_0, 8, 32, codes_q8_0},
    {GgufType::kQ2_K, 2, 16, codes_q2_k},
    {GgufType::kQ3_K, 3, 16, codes_q3_k},
    {GgufType::kQ4_K, 4, 32, [](const uint8_t* b, BlockCodes& c) { codes_q4_q5_k(b, c, false); }},
    {GgufType::kQ5_K, 5, 32, [](const uint8_t* b, BlockCodes& c) { codes_q4_q5_k(b, c, true); }},
    {GgufType::kQ6_K, 6, 16, codes_q6_k},
};

const Rewrite* rewrite_of(GgufType t) {
  for (const Rewrite& r : kRewrites)
    if (r.type == t) return &r;
  return nullptr;
}

bool exact_in_f16(float v) { return f16_to_float(float_to_f16(v)) == v; }

std::vector<uint8_t> encode(const std::vector<float>& v, ScalarType t) {
  std::vector<uint8_t> out(v.size() * scalar_size(t));
  convert_from_float(v.data(), v.size(), t, out.data());
  return out;
}

}  // namespace

void q8_0_block_as_affine(const uint8_t* block, uint8_t* codes, float& scale, float& bias) {
  const float d = gguf_half_at(block);
  for (int j = 0; j < kQK; ++j) codes[j] = uint8_t(int(int8_t(block[2 + j])) + 128);
  scale = d, bias = -128 * d;
}

bool gguf_affine_supported(GgufType t) { return rewrite_of(t) != nullptr; }
int gguf_affine_bits(GgufType t) { return rewrite_of(t) ? rewrite_of(t)->bits : 0; }
int gguf_affine_group_size(GgufType t) { return rewrite_of(t) ? rewrite_of(t)->group_size : 0; }
ScalarType gguf_affine_scale_type(GgufType t) {
  return gguf_block_elems(t) == kQK ? ScalarType::kF16 : ScalarType::kF32;
}

OwnedMatrix gguf_to_affine(const WeightMatrix& w) {
  const Rewrite* rw = w.format == WeightFormat::kGguf ? rewrite_of(w.gguf_type) : nullptr;
  if (rw == nullptr || w.tiled) throw Error("internal: gguf_to_affine of a matrix it cannot read");
  const int elems = gguf_block_elems(w.gguf_type), groups_per_block = elems / rw->group_size;
  const int blocks = w.cols / elems, groups = w.cols / rw->group_size;
  const size_t block_bytes = gguf_block_bytes(w.gguf_type), row_bytes = w.row_bytes();
  const size_t words_per_row = size_t(w.cols) * rw->bits / 32;

  OwnedMatrix out;
  std::vector<uint32_t> words(size_t(w.rows) * words_per_row, 0);
  std::vector<float> scales(size_t(w.rows) * groups), biases(scales.size());
  BlockCodes c;
  for (int r = 0; r < w.rows; ++r) {
    uint32_t* row_words = words.data() + size_t(r) * words_per_row;
    for (int blk = 0; blk < blocks; ++blk) {
      rw->codes(w.data + size_t(r) * row_bytes + size_t(blk) * block_bytes, c);
      const size_t g0 = size_t(r) * groups + size_t(blk) * groups_per_block;
      std::copy(c.scale, c.scale + groups_per_block, scales.begin() + g0);
      std::copy(c.bias, c.bias + groups_per_block, biases.begin() + g0);
      for (int j = 0; j < elems; ++j) {  // LSB-first bit stream: a code may cross two words
        const size_t bit = (size_t(blk) * elems + j) * rw->bits;
        row_words[bit / 32] |= uint32_t(c.q[j]) << (bit % 32);
        if (bit % 32 + rw->bits > 32)
          row_words[bit / 32 + 1] |= uint32_t(c.q[j]) >> (32 - bit % 32);
      }
    }
  }
  const ScalarType type = gguf_affine_scale_type(w.gguf_type);
  if (type == ScalarType::kF16)
    for (size_t i = 0; i < scales.size(); ++i)
      if (!exact_in_f16(scales[i]) || !exact_in_f16(biases[i]))
        throw Error(std::string("a GGUF ") + gguf_type_name(w.gguf_type) + " block's scale " +
                    std::to_string(scales[i]) + " does not fit the f16 rewrite");
  out.data.resize(words.size() * 4);
  std::memcpy(out.data.data(), words.data(), out.data.size());
  out.scales = encode(scales, type);
  out.biases = encode(biases, type);

  out.view.format = WeightFormat::kAffine;
  out.view.rows = w.rows;
  out.view.cols = w.cols;
  out.view.bits = rw->bits;
  out.view.group_size = rw->group_size;
  out.view.scale_type = type;
  out.view.data = out.data.data();
  out.view.scales = out.scales.data();
  out.view.biases = out.biases.data();
  return out;
}

}  // namespace qmlx
