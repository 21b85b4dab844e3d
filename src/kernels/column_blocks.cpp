#include "kernels/column_blocks.h"

#include <cstring>
#include <string>

#include "base/error.h"

namespace qmlx {
namespace {

// Each row of `src` ([rows][blocks * unit] bytes) with its units moved: unit i to to[i].
std::vector<uint8_t> move_units(const uint8_t* src, int rows, size_t unit,
                                const std::vector<int>& to) {
  const size_t row = unit * to.size();
  std::vector<uint8_t> out(size_t(rows) * row);
  for (int r = 0; r < rows; ++r)
    for (size_t i = 0; i < to.size(); ++i)
      std::memcpy(out.data() + size_t(r) * row + size_t(to[i]) * unit,
                  src + size_t(r) * row + i * unit, unit);
  return out;
}

}  // namespace

OwnedMatrix move_column_blocks(const WeightMatrix& w, int block, const std::vector<int>& to) {
  if (w.tiled || block <= 0 || size_t(w.cols) != size_t(block) * to.size())
    throw Error("internal: move_column_blocks of a matrix of another shape");
  std::vector<bool> seen(to.size(), false);
  for (int t : to) {
    if (t < 0 || size_t(t) >= to.size() || seen[size_t(t)])
      throw Error("internal: move_column_blocks without a permutation");
    seen[size_t(t)] = true;
  }
  if (w.format == WeightFormat::kGguf) {
    const OwnedMatrix affine = gguf_to_affine(w);
    return move_column_blocks(affine.view, block, to);
  }
  OwnedMatrix out;
  out.view = w;
  if (w.format != WeightFormat::kAffine) {
    out.data = move_units(w.data, w.rows, w.row_bytes() / size_t(w.cols) * block, to);
    out.view.data = out.data.data();
    return out;
  }
  if (block % w.group_size != 0 || size_t(block) * w.bits % 8 != 0)
    throw Error("a block of " + std::to_string(block) + " columns cuts " + std::to_string(w.bits) +
                "-bit codes in groups of " + std::to_string(w.group_size));
  out.data = move_units(w.data, w.rows, size_t(block) * w.bits / 8, to);
  const size_t meta = size_t(block / w.group_size) * scalar_size(w.scale_type);
  out.scales = move_units(w.scales, w.rows, meta, to);
  out.biases = move_units(w.biases, w.rows, meta, to);
  out.view.data = out.data.data();
  out.view.scales = out.scales.data();
  out.view.biases = out.biases.data();
  return out;
}

}  // namespace qmlx
