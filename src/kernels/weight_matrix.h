// WeightMatrix: a view of one [rows, cols] weight matrix in the format it is stored in (f32,
// f16, bf16, MLX affine quantization, or a GGUF block format), usually pointing into a
// memory-mapped file. Kernels read weights only through this view, so a 4-bit model costs 4 bits
// per weight in memory and the matmul dequantizes small blocks on the fly.
//
// MLX affine quantization (model-spec §5): row r is an LSB-first bit stream of `bits`-bit codes
// q; w[r][c] = scales[r][c / group_size] * q[r][c] + biases[r][c / group_size].
//
// GGUF (kernels/gguf_blocks.h): each row is cols / block_elems self-contained blocks of
// gguf_type; scales live inside the blocks, so `scales`/`biases` are unused.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/gguf_blocks.h"
#include "kernels/scalar_type.h"

namespace qmlx {

enum class WeightFormat : uint8_t { kF32, kF16, kBF16, kAffine, kGguf };

struct WeightMatrix {
  WeightFormat format = WeightFormat::kF32;
  int rows = 0;
  int cols = 0;
  const uint8_t* data = nullptr;  // rows * row_bytes()
  // Affine quantization only.
  int bits = 0;
  int group_size = 0;
  ScalarType scale_type = ScalarType::kF32;
  const uint8_t* scales = nullptr;  // [rows][cols / group_size] of scale_type
  const uint8_t* biases = nullptr;
  // Rows interleaved in tiles of 16 (kernels/affine_tiles.h) instead of row by row; data,
  // scales and biases then follow that layout.
  bool tiled = false;
  // GGUF block formats only.
  GgufType gguf_type = GgufType::kF32;

  // Affine quantization (the GGUF formats carry their scales inside the row).
  bool quantized() const { return format == WeightFormat::kAffine; }
  int groups_per_row() const { return quantized() ? cols / group_size : 0; }
  size_t row_bytes() const;
  // Bytes read by one full pass over the matrix (weights plus scales and biases).
  size_t bytes() const;
  // Rows [begin, end) as a matrix of their own (no copy). Not for tiled matrices.
  WeightMatrix row_slice(int begin, int end) const;
};

// True for the quantization parameters this engine implements.
bool affine_params_supported(int bits, int group_size);

// Writes rows [begin, end) as floats, (end - begin) * cols values.
void dequantize_rows(const WeightMatrix& w, int begin, int end, float* out);

// Columns a stored row can be cut at: 1 for the float formats, the group size for affine
// quantization, the block size for GGUF block formats. cols is a multiple of it.
int column_alignment(const WeightMatrix& w);

// Bytes a row stores for its first `n` columns (n a multiple of column_alignment(w)), scales
// and biases of affine matrices not counted.
size_t stored_bytes(const WeightMatrix& w, int n);

// Writes columns [k0, k1) of row r as floats (k1 - k0 values); k0 and k1 are multiples of
// column_alignment(w) (or k1 == cols).
void dequantize_row_range(const WeightMatrix& w, int r, int k0, int k1, float* out);

}  // namespace qmlx
