#include "kernels/weight_matrix.h"

#include "base/error.h"
#include "kernels/affine_codes.h"
#include "kernels/affine_tiles.h"

namespace qmlx {

size_t WeightMatrix::row_bytes() const { return stored_bytes(*this, cols); }

size_t WeightMatrix::bytes() const {
  size_t total = size_t(rows) * row_bytes();
  if (quantized()) total += 2 * size_t(rows) * groups_per_row() * scalar_size(scale_type);
  return total;
}

WeightMatrix WeightMatrix::row_slice(int begin, int end) const {
  // Slices are cut while loading, before matrices are tiled; a tile holds 16 rows together.
  if (tiled) throw Error("internal: row_slice of a tiled weight matrix");
  WeightMatrix s = *this;
  s.rows = end - begin;
  s.data = data + size_t(begin) * row_bytes();
  if (quantized()) {
    size_t meta_row = size_t(groups_per_row()) * scalar_size(scale_type);
    s.scales = scales + size_t(begin) * meta_row;
    s.biases = biases + size_t(begin) * meta_row;
  }
  return s;
}

bool affine_params_supported(int bits, int group_size) {
  bool bits_ok = bits == 2 || bits == 3 || bits == 4 || bits == 5 || bits == 6 || bits == 8;
  bool group_ok = group_size == 32 || group_size == 64 || group_size == 128;
  return bits_ok && group_ok;
}

int column_alignment(const WeightMatrix& w) {
  switch (w.format) {
    case WeightFormat::kAffine:
      return w.group_size;
    case WeightFormat::kGguf:
      return gguf_block_elems(w.gguf_type);
    default:
      return 1;
  }
}

size_t stored_bytes(const WeightMatrix& w, int n) {
  switch (w.format) {
    case WeightFormat::kF32:
      return size_t(n) * 4;
    case WeightFormat::kF16:
    case WeightFormat::kBF16:
      return size_t(n) * 2;
    case WeightFormat::kAffine:
      return size_t(n) * w.bits / 8;
    case WeightFormat::kGguf:
      return gguf_bytes(w.gguf_type, size_t(n));
  }
  return 0;
}

void dequantize_row_range(const WeightMatrix& w, int r, int k0, int k1, float* out) {
  if (w.tiled) return dequantize_tiled_row_range(w, r, k0, k1, out);
  const uint8_t* at = w.data + size_t(r) * w.row_bytes() + stored_bytes(w, k0);
  const size_t n = size_t(k1 - k0);
  switch (w.format) {
    case WeightFormat::kF32:
      convert_to_float(at, ScalarType::kF32, n, out);
      break;
    case WeightFormat::kF16:
      convert_to_float(at, ScalarType::kF16, n, out);
      break;
    case WeightFormat::kBF16:
      convert_to_float(at, ScalarType::kBF16, n, out);
      break;
    case WeightFormat::kAffine:
      dequantize_affine_groups(w, r, k0 / w.group_size, (k1 + w.group_size - 1) / w.group_size,
                               out);
      break;
    case WeightFormat::kGguf:
      gguf_dequantize(w.gguf_type, at, n, out);
      break;
  }
}

void dequantize_rows(const WeightMatrix& w, int begin, int end, float* out) {
  if (w.tiled) return dequantize_tiled_rows(w, begin, end, out);
  for (int r = begin; r < end; ++r, out += w.cols) dequantize_row_range(w, r, 0, w.cols, out);
}

}  // namespace qmlx
