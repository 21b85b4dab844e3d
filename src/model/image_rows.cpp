#include "model/image_rows.h"

#include <algorithm>
#include <string>

#include "base/error.h"

namespace qmlx {

const SequenceImage* image_at(std::span<const SequenceImage> images, int64_t row) {
  for (const SequenceImage& image : images)
    if (row >= image.first_row && row < image.end_row()) return &image;
  return nullptr;
}

RopePosition next_rope_position(std::span<const SequenceImage> images, int64_t row,
                                int64_t& delta) {
  const SequenceImage* image = image_at(images, row);
  if (!image) return {row + delta, row + delta, row + delta};
  const RopePosition p = rope_position(std::span(image, 1), row);
  if (row == image->end_row() - 1) delta = image->next_position() - image->end_row();
  return p;
}

void check_image_embeddings(std::span<const SequenceImage> images, int64_t first_row, int64_t count,
                            int hidden) {
  for (const SequenceImage& image : images) {
    if (image.end_row() <= first_row || image.first_row >= first_row + count) continue;
    const size_t want = size_t(image.rows()) * size_t(hidden);
    const size_t have = image.embeddings ? image.embeddings->size() : 0;
    if (have != want)
      throw Error("the image at row " + std::to_string(image.first_row) + " (" +
                  std::to_string(image.grid_h) + " x " + std::to_string(image.grid_w) +
                  " tokens) has " + std::to_string(have) + " embedding values, not " +
                  std::to_string(want));
  }
}

void place_image_rows(std::span<const SequenceImage> images, int64_t first_row, int64_t count,
                      int hidden, float* out) {
  for (const SequenceImage& image : images) {
    const int64_t begin = std::max(image.first_row, first_row);
    const int64_t end = std::min(image.end_row(), first_row + count);
    if (begin >= end) continue;
    std::copy(image.embeddings->begin() + (begin - image.first_row) * hidden,
              image.embeddings->begin() + (end - image.first_row) * hidden,
              out + (begin - first_row) * hidden);
  }
}

}  // namespace qmlx
