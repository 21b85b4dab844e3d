#include "kernels/weight_matrix.h"

#include "kernels/affine_codes.h"

namespace qmlx {

size_t WeightMatrix::row_bytes() const {
  switch (format) {
    case WeightFormat::kF32:
      return size_t(cols) * 4;
    case WeightFormat::kF16:
    case WeightFormat::kBF16:
      return size_t(cols) * 2;
    case WeightFormat::kAffine:
      return size_t(cols) * bits / 8;
    case WeightFormat::kGguf:
      return gguf_bytes(gguf_type, size_t(cols));
  }
  return 0;
}

size_t WeightMatrix::bytes() const {
  size_t total = size_t(rows) * row_bytes();
  if (quantized()) total += 2 * size_t(rows) * groups_per_row() * scalar_size(scale_type);
  return total;
}

WeightMatrix WeightMatrix::row_slice(int begin, int end) const {
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

void dequantize_rows(const WeightMatrix& w, int begin, int end, float* out) {
  for (int r = begin; r < end; ++r, out += w.cols) {
    const uint8_t* row = w.data + size_t(r) * w.row_bytes();
    switch (w.format) {
      case WeightFormat::kF32:
        convert_to_float(row, ScalarType::kF32, w.cols, out);
        break;
      case WeightFormat::kF16:
        convert_to_float(row, ScalarType::kF16, w.cols, out);
        break;
      case WeightFormat::kBF16:
        convert_to_float(row, ScalarType::kBF16, w.cols, out);
        break;
      case WeightFormat::kAffine:
        dequantize_affine_row(w, r, out);
        break;
      case WeightFormat::kGguf:
        gguf_dequantize(w.gguf_type, row, size_t(w.cols), out);
        break;
    }
  }
}

}  // namespace qmlx
