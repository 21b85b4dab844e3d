// GGUF quantized blocks read in place (ggml's layouts; kernels/gguf_blocks.h): each value as an
// unsigned code and each group's scale and bias, exactly as kernels/gguf_affine.cpp rewrites a
// block into affine codes (the same codes, and scales and biases from the same float
// operations), so a kernel reading blocks here computes what it would from the rewrite without
// holding the rewrite's larger copy (a Q6_K row: 6.56 bits a weight here, 10 rewritten).
//
// The including shader defines GGUF_WORDS as the uint array the blocks live in and the constant
// GGUF_TYPE (ggml's type id: 2 Q4_0, 3 Q4_1, 6 Q5_0, 7 Q5_1, 8 Q8_0, 10 Q2_K, 11 Q3_K, 12 Q4_K,
// 13 Q5_K, 14 Q6_K). Rows start at any even byte (a block's size need not be a multiple of 4),
// so everything is addressed in bytes.

uint gguf_byte(uint b) { return (GGUF_WORDS[b >> 2] >> ((b & 3u) * 8u)) & 0xffu; }
// The little-endian f16 at even byte b, widened exactly.
float gguf_half(uint b) {
  return unpackHalf2x16((GGUF_WORDS[b >> 2] >> ((b & 2u) * 8u)) & 0xffffu).x;
}

uint gguf_block_values() { return GGUF_TYPE >= 10u ? 256u : 32u; }
uint gguf_block_bytes() {
  switch (GGUF_TYPE) {
    case 2u: return 18u;
    case 3u: return 20u;
    case 6u: return 22u;
    case 7u: return 24u;
    case 8u: return 34u;
    case 10u: return 84u;
    case 11u: return 110u;
    case 12u: return 144u;
    case 13u: return 176u;
    default: return 210u;  // 14
  }
}
// Values per group (gguf_affine.cpp's group size): 16 for Q2_K, Q3_K and Q6_K, else 32.
uint gguf_group_values() {
  return GGUF_TYPE == 10u || GGUF_TYPE == 11u || GGUF_TYPE == 14u ? 16u : 32u;
}

// Q4_0 .. Q5_1: value j's nibble (byte j % 16, low nibble for j < 16) and, for the five-bit
// types, its fifth bit (bit j of the 32-bit word at qh).
uint gguf_nibble(uint qs, uint j) { return (gguf_byte(qs + (j & 15u)) >> ((j >> 4) * 4u)) & 15u; }
uint gguf_fifth_bit(uint qh, uint j) { return ((gguf_byte(qh + (j >> 3)) >> (j & 7u)) & 1u) << 4; }

// Code of value k of the row whose first block starts at byte `row`.
uint gguf_code(uint row, uint k) {
  const uint b = row + (k / gguf_block_values()) * gguf_block_bytes();
  const uint j = k % gguf_block_values();
  switch (GGUF_TYPE) {
    case 2u: return gguf_nibble(b + 2u, j);
    case 3u: return gguf_nibble(b + 4u, j);
    case 6u: return gguf_nibble(b + 6u, j) | gguf_fifth_bit(b + 2u, j);
    case 7u: return gguf_nibble(b + 8u, j) | gguf_fifth_bit(b + 4u, j);
    case 8u: return gguf_byte(b + 2u + j) ^ 0x80u;  // int8 + 128
    case 10u: {  // 2 halves of 4 bit-planes, each plane two groups of 16
      const uint g = j >> 4, half_ = g >> 3, plane = (g & 7u) >> 1, part = g & 1u;
      return (gguf_byte(b + 16u + half_ * 32u + (j & 15u) + 16u * part) >> (2u * plane)) & 3u;
    }
    case 11u: {  // low 2 bits from the planes, the third from hmask
      const uint half_ = j >> 7, plane = (j & 127u) >> 5, l = j & 31u;
      const uint low = (gguf_byte(b + 32u + half_ * 32u + l) >> (2u * plane)) & 3u;
      return low | (((gguf_byte(b + l) >> (half_ * 4u + plane)) & 1u) << 2);
    }
    case 12u:
    case 13u: {  // 4 chunks of 64: low nibbles, then high; Q5_K's fifth bit g of qh[l]
      const uint chunk = j >> 6, nib = (j & 63u) >> 5, l = j & 31u;
      const uint q = b + (GGUF_TYPE == 13u ? 48u : 16u) + chunk * 32u + l;
      const uint low = (gguf_byte(q) >> (4u * nib)) & 15u;
      return GGUF_TYPE == 13u ? low | (((gguf_byte(b + 16u + l) >> (j >> 5)) & 1u) << 4) : low;
    }
    default: {  // 14, Q6_K: nibble k / 2 of ql[l + 32 (k % 2)], bits 2k, 2k + 1 of qh[l]
      const uint half_ = j >> 7, k = (j & 127u) >> 5, l = j & 31u;
      const uint low = (gguf_byte(b + half_ * 64u + l + 32u * (k & 1u)) >> (4u * (k >> 1))) & 15u;
      return low | (((gguf_byte(b + 128u + half_ * 32u + l) >> (2u * k)) & 3u) << 4);
    }
  }
}

// Q4_K / Q5_K: sub-block j's 6-bit scale and min from the 12 packed bytes at p.
uvec2 gguf_scale_min_k4(uint p, uint j) {
  if (j < 4u) return uvec2(gguf_byte(p + j) & 63u, gguf_byte(p + j + 4u) & 63u);
  return uvec2((gguf_byte(p + j + 4u) & 15u) | ((gguf_byte(p + j - 4u) >> 6) << 4),
               (gguf_byte(p + j + 4u) >> 4) | ((gguf_byte(p + j) >> 6) << 4));
}

// Q3_K: scale i, unbiased, from the 12 packed bytes at p.
int gguf_q3_k_scale(uint p, uint i) {
  const uint low = i < 8u ? gguf_byte(p + i) & 15u : gguf_byte(p + i - 8u) >> 4;
  const uint high = (gguf_byte(p + 8u + (i & 3u)) >> (2u * (i >> 2))) & 3u;
  return int(low | (high << 4)) - 32;
}

// Scale and bias of group g of the row whose first block starts at byte `row`. `precise`: each
// is the one rounded float operation gguf_affine.cpp computes, never fused with the next.
void gguf_group(uint row, uint g, out float scale, out float bias) {
  const uint per_block = gguf_block_values() / gguf_group_values();
  const uint b = row + (g / per_block) * gguf_block_bytes(), i = g % per_block;
  precise float s, o;
  switch (GGUF_TYPE) {
    case 2u: s = gguf_half(b); o = -8.0 * s; break;
    case 3u: s = gguf_half(b); o = gguf_half(b + 2u); break;
    case 6u: s = gguf_half(b); o = -16.0 * s; break;
    case 7u: s = gguf_half(b); o = gguf_half(b + 2u); break;
    case 8u: s = gguf_half(b); o = -128.0 * s; break;
    case 10u: {
      const uint sc = gguf_byte(b + i);
      s = gguf_half(b + 80u) * float(sc & 15u);
      o = -(gguf_half(b + 82u) * float(sc >> 4));
      break;
    }
    case 11u: s = gguf_half(b + 108u) * float(gguf_q3_k_scale(b + 96u, i)); o = -4.0 * s; break;
    case 12u:
    case 13u: {
      const uvec2 sm = gguf_scale_min_k4(b + 4u, i);
      s = gguf_half(b) * float(sm.x);
      o = -(gguf_half(b + 2u) * float(sm.y));
      break;
    }
    default: {  // 14
      const int sc = int(gguf_byte(b + 192u + i) << 24) >> 24;  // int8
      s = gguf_half(b + 208u) * float(sc);
      o = -32.0 * s;
      break;
    }
  }
  scale = s;
  bias = o;
}
