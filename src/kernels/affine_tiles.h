// Affine tiles: MLX 4- and 8-bit matrices with their rows interleaved in tiles of 16, the layout
// the decode GEMV reads fastest (kernels/affine_gemv.h).
//
// Stored row by row, each generated row's dot with one weight row ends in 16 (AVX-512) or 8
// (AVX2) int32 partial sums per quantization group that have to be folded to one before the
// group's scale applies: at 4 generated rows that folding cost as much as the multiply-adds.
// Interleaved, one 32-byte step holds 2 columns (8-bit) or 4 (4-bit, two nibbles per byte) of 16
// rows, so one vpdpwssd against a broadcast pair of activations adds to 16 rows' sums at once,
// lane i being row i: no folding, and the scales of 16 rows apply in one vector.
//
// Layout of a tiled matrix (WeightMatrix::tiled): rows padded to a multiple of 16 with zero codes,
// scales and biases. Tile t (rows 16t .. 16t + 15) starts at data + 16 * t * row_bytes(); in it,
// group g starts at 16 * g * group_bytes, and step k of the group at 32 * k, where bytes 2i and
// 2i + 1 belong to row 16t + i:
//   8-bit: byte 2i + j is the code of column g * group_size + 2k + j;
//   4-bit: byte 2i + j holds column g * group_size + 4k + j in its low nibble and column
//          g * group_size + 4k + 2 + j in its high nibble.
// Scales and biases (scale_type, like the stored ones): [tile][group][16].
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "kernels/weight_matrix.h"

namespace qmlx {

constexpr int kAffineTileRows = 16;
constexpr int kAffineTileStepBytes = 32;

// False when QMLX_AFFINE_TILES=0: models then keep their matrices row-major (for benchmarks
// comparing the two kernels).
bool affine_tiles_enabled();

// True for row-major affine matrices this layout takes: 4 or 8 bits, groups of 32, 64 or 128.
bool affine_tiles_supported(const WeightMatrix& w);

// The bytes a tiled matrix points into.
struct AffineTileStorage {
  std::unique_ptr<uint8_t[]> codes, scales, biases;
};

// A tiled copy of w (affine_tiles_supported(w)), in `storage`, made on default_pool().
// Dequantizes to exactly the same floats as w.
WeightMatrix tile_affine_matrix(const WeightMatrix& w, AffineTileStorage& storage);

// GGUF Q8_0 (blocks of 32 int8 codes q and an f16 scale d, w = d q) is the affine 8-bit format
// with codes q + 128, groups of 32, f16 scales d and biases -128 d, exactly (-128 d is exact in
// f16 below |d| = 512): such matrices are tiled as that.
constexpr int kQ8_0Block = 32;
bool q8_0_tiles_supported(const WeightMatrix& w);
// The tiled affine matrix with w's values (format kAffine), or w itself when a scale is too
// large for the exact conversion.
WeightMatrix tile_q8_0_matrix(const WeightMatrix& w, AffineTileStorage& storage);

// Rows 16 * tile .. 16 * tile + 15 of a tiled matrix as a row-major matrix of 16 rows, written
// to `codes` (16 * row_bytes()), `scales` and `biases` (16 * groups_per_row() each, of the
// scale type); rows past the matrix are zero.
WeightMatrix untile_affine_rows(const WeightMatrix& w, int tile, uint8_t* codes, uint8_t* scales,
                                uint8_t* biases);

// Rows [begin, end) of a tiled matrix as floats, exactly those of the row-major matrix (each
// tile is put back in rows first, then dequantized as stored rows are).
void dequantize_tiled_rows(const WeightMatrix& w, int begin, int end, float* out);
// Columns [k0, k1) of row r the same way (k0, k1 as for dequantize_row_range).
void dequantize_tiled_row_range(const WeightMatrix& w, int r, int k0, int k1, float* out);

}  // namespace qmlx
