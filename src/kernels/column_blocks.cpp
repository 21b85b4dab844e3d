#include "kernels/column_blocks.h"

#include <cstring>
#include <string>

#include "base/error.h"

namespace qmlx {
namespace {

// Rows of `src` (`rows` rows of `row` bytes) made of its units from[j] (`unit` bytes each).
std::vector<uint8_t> gather_units(const uint8_t* src, int rows, size_t row, size_t unit,
                                  const std::vector<int>& from) {
  const size_t out_row = unit * from.size();
  std::vector<uint8_t> out(size_t(rows) * out_row);
  for (int r = 0; r < rows; ++r)
    for (size_t j = 0; j < from.size(); ++j)
      std::memcpy(out.data() + size_t(r) * out_row + j * unit,
                  src + size_t(r) * row + size_t(from[j]) * unit, unit);
  return out;
}

}  // namespace

std::string column_blocks_refusal(const WeightMatrix& w, int block) {
  if (w.format != WeightFormat::kAffine && w.format != WeightFormat::kGguf) return "";
  const bool gguf = w.format == WeightFormat::kGguf;
  const int group = gguf ? gguf_affine_group_size(w.gguf_type) : w.group_size;
  const int bits = gguf ? gguf_affine_bits(w.gguf_type) : w.bits;
  if (group > 0 && block % group == 0 && size_t(block) * bits % 8 == 0) return "";
  return "a block of " + std::to_string(block) + " columns cuts " + std::to_string(bits) +
         "-bit codes in groups of " + std::to_string(group);
}

OwnedMatrix gather_column_blocks(const WeightMatrix& w, int block, const std::vector<int>& from) {
  if (w.tiled || block <= 0 || w.cols % block != 0 || from.empty())
    throw Error("internal: gather_column_blocks of a matrix of another shape");
  for (int f : from)
    if (f < 0 || f >= w.cols / block)
      throw Error("internal: gather_column_blocks of a block the matrix does not have");
  if (const std::string why = column_blocks_refusal(w, block); !why.empty()) throw Error(why);
  if (w.format == WeightFormat::kGguf) {
    const OwnedMatrix affine = gguf_to_affine(w);
    return gather_column_blocks(affine.view, block, from);
  }
  OwnedMatrix out;
  out.view = w;
  out.view.cols = block * int(from.size());
  if (w.format != WeightFormat::kAffine) {
    out.data =
        gather_units(w.data, w.rows, w.row_bytes(), w.row_bytes() / size_t(w.cols) * block, from);
    out.view.data = out.data.data();
    return out;
  }
  out.data = gather_units(w.data, w.rows, w.row_bytes(), size_t(block) * w.bits / 8, from);
  const size_t meta_row = size_t(w.groups_per_row()) * scalar_size(w.scale_type);
  const size_t meta = size_t(block / w.group_size) * scalar_size(w.scale_type);
  out.scales = gather_units(w.scales, w.rows, meta_row, meta, from);
  out.biases = gather_units(w.biases, w.rows, meta_row, meta, from);
  out.view.data = out.data.data();
  out.view.scales = out.scales.data();
  out.view.biases = out.biases.data();
  return out;
}

}  // namespace qmlx
