#include "kernels/affine_tiles.h"

#include <immintrin.h>
#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "base/thread_pool.h"
#include "kernels/affine_codes.h"
#include "kernels/gguf_affine.h"

namespace qmlx {
namespace {

// Lines j = 0..15 of `out` get the 16-bit element j of each of the 16 lines of `in` (32 bytes
// each): a 16 x 16 transpose of 16-bit elements. In-lane 8 x 8 transposes of rows 0-7 and 8-15
// (unpack 16, 32, 64), then the 128-bit halves exchanged.
void transpose_16x16_u16(const uint8_t* const* in, uint8_t* const* out) {
  auto load = [&](int i) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in[i])); };
  __m256i half[2][8];
  for (int h = 0; h < 2; ++h) {
    __m256i a[8], b[8];
    for (int i = 0; i < 4; ++i) {
      a[i] = _mm256_unpacklo_epi16(load(8 * h + 2 * i), load(8 * h + 2 * i + 1));
      a[4 + i] = _mm256_unpackhi_epi16(load(8 * h + 2 * i), load(8 * h + 2 * i + 1));
    }
    for (int i = 0; i < 2; ++i) {
      const int x = 4 * i;  // a[x..x+3]: columns 0-3 (x = 0) or 4-7 (x = 4) of each lane
      b[x] = _mm256_unpacklo_epi32(a[x], a[x + 1]);
      b[x + 1] = _mm256_unpacklo_epi32(a[x + 2], a[x + 3]);
      b[x + 2] = _mm256_unpackhi_epi32(a[x], a[x + 1]);
      b[x + 3] = _mm256_unpackhi_epi32(a[x + 2], a[x + 3]);
    }
    for (int i = 0; i < 4; ++i) {
      half[h][2 * i] = _mm256_unpacklo_epi64(b[2 * i], b[2 * i + 1]);
      half[h][2 * i + 1] = _mm256_unpackhi_epi64(b[2 * i], b[2 * i + 1]);
    }
  }
  for (int j = 0; j < 8; ++j) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[j]),
                        _mm256_permute2x128_si256(half[0][j], half[1][j], 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[8 + j]),
                        _mm256_permute2x128_si256(half[0][j], half[1][j], 0x31));
  }
}

// A stored 4-bit row holds code 2b in the low nibble of byte b and 2b + 1 in the high one; a
// tile step wants codes 4k + j and 4k + 2 + j in one byte. Per 16-bit pair of bytes that is an
// exchange of its two middle nibbles, its own inverse.
inline __m256i swap_middle_nibbles(__m256i v) {
  const __m256i keep = _mm256_set1_epi16(int16_t(0xf00f));
  const __m256i low = _mm256_and_si256(_mm256_srli_epi16(v, 4), _mm256_set1_epi16(0x00f0));
  const __m256i high = _mm256_and_si256(_mm256_slli_epi16(v, 4), _mm256_set1_epi16(0x0f00));
  return _mm256_or_si256(_mm256_and_si256(v, keep), _mm256_or_si256(low, high));
}
inline uint16_t swap_middle_nibbles(uint16_t v) {
  return uint16_t((v & 0xf00f) | ((v >> 4) & 0x00f0) | ((v << 4) & 0x0f00));
}

// Across a whole tile the layout is a transpose: step s of the tile (32 bytes) holds the 16-bit
// element s of each of its 16 rows (groups follow each other in both), 4-bit pairs with their
// middle nibbles exchanged.
void interleave_tile(const uint8_t* const* rows, size_t row_bytes, int bits, uint8_t* tile) {
  const size_t steps = row_bytes / 2;
  size_t s = 0;
  for (; s + 16 <= steps; s += 16) {
    const uint8_t* in[kAffineTileRows];
    uint8_t* out[16];
    for (int i = 0; i < kAffineTileRows; ++i) in[i] = rows[i] + 2 * s;
    for (int j = 0; j < 16; ++j) out[j] = tile + (s + j) * kAffineTileStepBytes;
    transpose_16x16_u16(in, out);
  }
  for (; s < steps; ++s)
    for (int i = 0; i < kAffineTileRows; ++i)
      std::memcpy(tile + s * kAffineTileStepBytes + 2 * i, rows[i] + 2 * s, 2);
  if (bits != 4) return;
  for (size_t b = 0; b < steps * kAffineTileStepBytes; b += 32) {
    __m256i* at = reinterpret_cast<__m256i*>(tile + b);
    _mm256_storeu_si256(at, swap_middle_nibbles(_mm256_loadu_si256(at)));
  }
}

void deinterleave_tile(const uint8_t* tile, size_t row_bytes, int bits, uint8_t* const* rows) {
  const size_t steps = row_bytes / 2;
  alignas(32) uint8_t swapped[16 * kAffineTileStepBytes];
  size_t s = 0;
  for (; s + 16 <= steps; s += 16) {
    const uint8_t* in[16];
    uint8_t* out[kAffineTileRows];
    for (int j = 0; j < 16; ++j) {
      const uint8_t* line = tile + (s + j) * kAffineTileStepBytes;
      if (bits == 4) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(line));
        _mm256_store_si256(reinterpret_cast<__m256i*>(swapped + j * kAffineTileStepBytes),
                           swap_middle_nibbles(v));
        line = swapped + j * kAffineTileStepBytes;
      }
      in[j] = line;
    }
    for (int i = 0; i < kAffineTileRows; ++i) out[i] = rows[i] + 2 * s;
    transpose_16x16_u16(in, out);
  }
  for (; s < steps; ++s)
    for (int i = 0; i < kAffineTileRows; ++i) {
      uint16_t v;
      std::memcpy(&v, tile + s * kAffineTileStepBytes + 2 * i, 2);
      if (bits == 4) v = swap_middle_nibbles(v);
      std::memcpy(rows[i] + 2 * s, &v, 2);
    }
}

// n bytes, not cleared (every one is written once), in transparent huge pages where the kernel
// gives them: faulting 800 MB of tiles in 4 KiB at a time took 5 s on a virtual machine; the
// decode GEMV then also misses the TLB less.
std::unique_ptr<uint8_t[]> uncleared_buffer(size_t n) {
  std::unique_ptr<uint8_t[]> buffer(new uint8_t[n]);
  static const uintptr_t huge = uintptr_t(2) << 20;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(buffer.get()) + huge - 1) & ~(huge - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(buffer.get()) + n) & ~(huge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
  return buffer;
}

// A tile's [group][16] scales or biases as [16][group] (element type T, 2 or 4 bytes).
template <typename T>
void transpose_meta(const uint8_t* tiled, int groups, uint8_t* rows) {
  for (int g = 0; g < groups; ++g)
    for (int i = 0; i < kAffineTileRows; ++i) {
      T v;
      std::memcpy(&v, tiled + (size_t(g) * kAffineTileRows + i) * sizeof(T), sizeof(T));
      std::memcpy(rows + (size_t(i) * groups + g) * sizeof(T), &v, sizeof(T));
    }
}

}  // namespace

bool affine_tiles_enabled() {
  const char* v = std::getenv("QMLX_AFFINE_TILES");
  return v == nullptr || std::strcmp(v, "0") != 0;
}

bool affine_tiles_supported(const WeightMatrix& w) {
  return w.format == WeightFormat::kAffine && !w.tiled && (w.bits == 4 || w.bits == 8) &&
         (w.group_size == 32 || w.group_size == 64 || w.group_size == 128);
}

WeightMatrix tile_affine_matrix(const WeightMatrix& w, AffineTileStorage& storage) {
  const int tiles = (w.rows + kAffineTileRows - 1) / kAffineTileRows;
  const int groups = w.groups_per_row();
  const size_t row_bytes = w.row_bytes(), meta_size = scalar_size(w.scale_type);
  const size_t tile_meta = size_t(groups) * kAffineTileRows * meta_size;
  storage.codes = uncleared_buffer(size_t(tiles) * kAffineTileRows * row_bytes);
  storage.scales = uncleared_buffer(tiles * tile_meta);
  storage.biases = uncleared_buffer(tiles * tile_meta);
  WeightMatrix out = w;
  out.tiled = true;
  out.data = storage.codes.get();
  out.scales = storage.scales.get();
  out.biases = storage.biases.get();
  const std::vector<uint8_t> zeros(row_bytes, 0);  // the rows that pad the last tile
  auto tile_range = [&](size_t first, size_t last) {
    for (size_t t = first; t < last; ++t) {
      uint8_t* scales = storage.scales.get() + t * tile_meta;
      uint8_t* biases = storage.biases.get() + t * tile_meta;
      if (int(t + 1) * kAffineTileRows > w.rows) {
        std::memset(scales, 0, tile_meta);
        std::memset(biases, 0, tile_meta);
      }
      const uint8_t* rows[kAffineTileRows];
      for (int i = 0; i < kAffineTileRows; ++i) {
        const int r = int(t) * kAffineTileRows + i;
        rows[i] = r < w.rows ? w.data + size_t(r) * row_bytes : zeros.data();
        if (r >= w.rows) continue;
        for (int g = 0; g < groups; ++g) {
          const size_t from = (size_t(r) * groups + g) * meta_size;
          const size_t to = (size_t(g) * kAffineTileRows + i) * meta_size;
          std::memcpy(scales + to, w.scales + from, meta_size);
          std::memcpy(biases + to, w.biases + from, meta_size);
        }
      }
      interleave_tile(rows, row_bytes, w.bits,
                      storage.codes.get() + t * kAffineTileRows * row_bytes);
    }
  };
  // In parallel: most of the time goes to faulting in the new pages.
  ThreadPool& pool = default_pool();
  pool.parallel_chunks(size_t(tiles), std::max<size_t>(1, size_t(tiles) / (8 * pool.size())),
                       tile_range);
  return out;
}

bool q8_0_tiles_supported(const WeightMatrix& w) {
  return w.format == WeightFormat::kGguf && w.gguf_type == GgufType::kQ8_0 &&
         w.cols % kQ8_0Block == 0;
}

WeightMatrix tile_q8_0_matrix(const WeightMatrix& w, AffineTileStorage& storage) {
  const int blocks = w.cols / kQ8_0Block;
  const size_t block_bytes = gguf_bytes(GgufType::kQ8_0, kQ8_0Block), row_bytes = w.row_bytes();
  // -128 d is exact in f16 unless it overflows (|d| >= 512; real files have |d| << 1).
  for (int r = 0; r < w.rows; ++r)
    for (int b = 0; b < blocks; ++b) {
      uint16_t d;
      std::memcpy(&d, w.data + size_t(r) * row_bytes + b * block_bytes, 2);
      if (!(std::fabs(f16_to_float(d)) < 512.f)) return w;
    }
  WeightMatrix a = w;
  a.format = WeightFormat::kAffine;
  a.gguf_type = GgufType::kF32;
  a.bits = 8;
  a.group_size = kQ8_0Block;
  a.scale_type = ScalarType::kF16;
  a.tiled = true;
  const int tiles = (w.rows + kAffineTileRows - 1) / kAffineTileRows;
  const size_t tile_meta = size_t(blocks) * kAffineTileRows * 2;
  storage.codes = uncleared_buffer(size_t(tiles) * kAffineTileRows * w.cols);
  storage.scales = uncleared_buffer(tiles * tile_meta);
  storage.biases = uncleared_buffer(tiles * tile_meta);
  a.data = storage.codes.get();
  a.scales = storage.scales.get();
  a.biases = storage.biases.get();
  auto tile_range = [&](size_t first, size_t last) {
    std::vector<uint8_t> codes(size_t(kAffineTileRows) * w.cols);
    for (size_t t = first; t < last; ++t) {
      uint16_t* scales = reinterpret_cast<uint16_t*>(storage.scales.get() + t * tile_meta);
      uint16_t* biases = reinterpret_cast<uint16_t*>(storage.biases.get() + t * tile_meta);
      const uint8_t* rows[kAffineTileRows];
      for (int i = 0; i < kAffineTileRows; ++i) {
        const int r = int(t) * kAffineTileRows + i;
        uint8_t* out = codes.data() + size_t(i) * w.cols;
        rows[i] = out;
        for (int b = 0; b < blocks; ++b) {
          uint16_t d = 0, bias = 0;
          if (r < w.rows) {
            float scale, offset;
            q8_0_block_as_affine(w.data + size_t(r) * row_bytes + b * block_bytes,
                                 out + b * kQ8_0Block, scale, offset);
            d = float_to_f16(scale), bias = float_to_f16(offset);
          } else {
            std::memset(out + b * kQ8_0Block, 0, kQ8_0Block);
          }
          scales[b * kAffineTileRows + i] = d;
          biases[b * kAffineTileRows + i] = bias;
        }
      }
      interleave_tile(rows, size_t(w.cols), 8,
                      storage.codes.get() + t * kAffineTileRows * size_t(w.cols));
    }
  };
  ThreadPool& pool = default_pool();
  pool.parallel_chunks(size_t(tiles), std::max<size_t>(1, size_t(tiles) / (8 * pool.size())),
                       tile_range);
  return a;
}

WeightMatrix untile_affine_rows(const WeightMatrix& w, int tile, uint8_t* codes, uint8_t* scales,
                                uint8_t* biases) {
  const int groups = w.groups_per_row();
  const size_t row_bytes = w.row_bytes(), meta_size = scalar_size(w.scale_type);
  uint8_t* rows[kAffineTileRows];
  for (int i = 0; i < kAffineTileRows; ++i) rows[i] = codes + size_t(i) * row_bytes;
  deinterleave_tile(w.data + size_t(tile) * kAffineTileRows * row_bytes, row_bytes, w.bits, rows);
  const size_t tile_meta = size_t(tile) * groups * kAffineTileRows * meta_size;
  if (meta_size == 2) {
    transpose_meta<uint16_t>(w.scales + tile_meta, groups, scales);
    transpose_meta<uint16_t>(w.biases + tile_meta, groups, biases);
  } else {
    transpose_meta<uint32_t>(w.scales + tile_meta, groups, scales);
    transpose_meta<uint32_t>(w.biases + tile_meta, groups, biases);
  }
  WeightMatrix out = w;
  out.tiled = false;
  out.rows = kAffineTileRows;
  out.data = codes;
  out.scales = scales;
  out.biases = biases;
  return out;
}

namespace {

// Groups [g0, g1) of rows [begin, end) of a tiled matrix as floats: each tile put back in rows,
// then dequantized as stored rows are.
void dequantize_tiled(const WeightMatrix& w, int begin, int end, int g0, int g1, float* out) {
  thread_local std::vector<uint8_t> codes, scales, biases;
  codes.resize(size_t(kAffineTileRows) * w.row_bytes());
  scales.resize(size_t(kAffineTileRows) * w.groups_per_row() * scalar_size(w.scale_type));
  biases.resize(scales.size());
  const size_t row_floats = size_t(g1 - g0) * w.group_size;
  for (int t = begin / kAffineTileRows; t * kAffineTileRows < end; ++t) {
    const WeightMatrix rows = untile_affine_rows(w, t, codes.data(), scales.data(), biases.data());
    const int r0 = t * kAffineTileRows;
    for (int r = std::max(begin, r0); r < std::min(end, r0 + kAffineTileRows);
         ++r, out += row_floats)
      dequantize_affine_groups(rows, r - r0, g0, g1, out);
  }
}

}  // namespace

void dequantize_tiled_rows(const WeightMatrix& w, int begin, int end, float* out) {
  dequantize_tiled(w, begin, end, 0, w.groups_per_row(), out);
}

void dequantize_tiled_row_range(const WeightMatrix& w, int r, int k0, int k1, float* out) {
  dequantize_tiled(w, r, r + 1, k0 / w.group_size, (k1 + w.group_size - 1) / w.group_size, out);
}

}  // namespace qmlx
