#include "model/sequence_image.h"

#include <string>

#include "base/error.h"

namespace qmlx {

void place_images(std::span<SequenceImage> images) {
  int64_t delta = 0, end = 0;
  for (SequenceImage& image : images) {
    if (image.grid_h <= 0 || image.grid_w <= 0) throw Error("place_images: an empty image grid");
    if (image.first_row < end) {
      throw Error("place_images: images overlap or are out of order (row " +
                  std::to_string(image.first_row) + ")");
    }
    image.first_position = image.first_row + delta;
    delta = image.next_position() - image.end_row();
    end = image.end_row();
  }
}

int64_t rope_delta_at(std::span<const SequenceImage> images, int64_t rows) {
  int64_t delta = 0;
  for (const SequenceImage& image : images) {
    if (image.end_row() > rows) break;
    delta = image.next_position() - image.end_row();
  }
  return delta;
}

RopePosition rope_position(std::span<const SequenceImage> images, int64_t row) {
  for (const SequenceImage& image : images) {
    if (row < image.first_row) break;
    if (row < image.end_row()) {
      const int64_t k = row - image.first_row;
      return {image.first_position, image.first_position + k / image.grid_w,
              image.first_position + k % image.grid_w};
    }
  }
  const int64_t p = row + rope_delta_at(images, row);
  return {p, p, p};
}

}  // namespace qmlx
