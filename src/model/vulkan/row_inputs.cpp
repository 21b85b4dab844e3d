#include "model/vulkan/row_inputs.h"

#include <algorithm>
#include <cstdint>

#include "base/error.h"
#include "model/image_rows.h"
#include "model/layers.h"

namespace qmlx::vulkan {

void add_sequence_rows(RowInputs& rows, std::span<const int32_t> tokens, int64_t position,
                       int64_t embed_row, std::span<const SequenceImage> images,
                       int64_t& rope_delta, const ModelConfig& c) {
  const int64_t count = int64_t(tokens.size());
  const int first = int(rows.ids.size());
  if (position + count > INT32_MAX) throw Error("--device vulkan: position beyond 2^31");
  check_image_embeddings(images, embed_row, count, c.hidden_size);
  int64_t delta = rope_delta;
  std::vector<int32_t> rope_rows;
  std::vector<float> own_angles;
  int64_t table_positions = rows.table_positions;
  for (int64_t t = 0; t < count; ++t) {
    const RopePosition p = next_rope_position(images, position + t, delta);
    if (c.rotary_dim <= 0) continue;
    if (p.t == p.h && p.h == p.w) {
      rope_rows.push_back(int32_t(p.t));
      table_positions = std::max(table_positions, p.t + 1);
      continue;
    }
    const RopeAngles a = rope_angles_at(p, c);  // throws without mrope_section
    const size_t j = (rows.own_angles.size() + own_angles.size()) / size_t(c.rotary_dim);
    rope_rows.push_back(-1 - int32_t(j));
    own_angles.insert(own_angles.end(), a.cos.begin(), a.cos.end());
    own_angles.insert(own_angles.end(), a.sin.begin(), a.sin.end());
  }
  // Nothing above threw: append.
  for (int64_t t = 0; t < count; ++t) {
    rows.ids.push_back(tokens[size_t(t)]);
    rows.positions.push_back(int32_t(position + t));
  }
  if (c.rotary_dim <= 0) rope_rows.assign(rows.positions.end() - count, rows.positions.end());
  rows.rope_rows.insert(rows.rope_rows.end(), rope_rows.begin(), rope_rows.end());
  rows.own_angles.insert(rows.own_angles.end(), own_angles.begin(), own_angles.end());
  rows.table_positions = std::max(table_positions, position + count);
  for (const SequenceImage& image : images) {
    const int64_t begin = std::max(image.first_row, embed_row);
    const int64_t end = std::min(image.end_row(), embed_row + count);
    if (begin >= end) continue;
    rows.images.push_back({first + int(begin - embed_row), int(end - begin),
                           image.embeddings->data() + (begin - image.first_row) * c.hidden_size});
  }
  rope_delta = delta;
}

}  // namespace qmlx::vulkan
