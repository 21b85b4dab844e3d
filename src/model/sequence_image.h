// An image in a sequence, as the language model sees it: the run of pad rows it occupies, what
// is fed there instead of the pad token's embedding (the vision tower's output, one row per
// 2 x 2 patches), and its place on the three sections of Qwen3.5's multimodal RoPE
// (model-spec 3.3; transformers' Qwen3-VL get_rope_index):
//   pad k of the image (merged grid gh x gw, row-major): (t, h, w) = (p, p + k / gw, p + k % gw)
//   where p = first_position; the text after it resumes at p + max(gh, gw).
// A text row r has all three positions equal to r + rope_delta, rope_delta being the sum, over
// the images wholly before r, of (max(gh, gw) - gh * gw): so a text-only sequence is exactly the
// plain RoPE of its token indexes. Still images only (grid t = 1).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace qmlx {

struct SequenceImage {
  int64_t first_row = 0;   // the sequence row (from 0) of its first pad
  int grid_h = 0;          // merged grid: grid_h * grid_w pad rows
  int grid_w = 0;
  int64_t first_position = 0;  // set by place_images
  // [rows()][hidden_size]: what the vision tower gave for this image.
  std::shared_ptr<const std::vector<float>> embeddings;

  int64_t rows() const { return int64_t(grid_h) * grid_w; }
  int64_t end_row() const { return first_row + rows(); }
  // The position of the text that follows the image.
  int64_t next_position() const { return first_position + std::max(grid_h, grid_w); }
};

// Sets each image's first_position from its first_row and the images before it. `images` must
// be in row order and must not overlap; throws qmlx::Error otherwise.
void place_images(std::span<SequenceImage> images);

// The rope_delta of a text row once rows [0, rows) are in: the shift the images wholly inside
// [0, rows) give the text after them (0 without images).
int64_t rope_delta_at(std::span<const SequenceImage> images, int64_t rows);

// The (t, h, w) M-RoPE position of sequence row `row`, given the images of its sequence and the
// rope_delta that holds for text rows at it.
struct RopePosition {
  int64_t t = 0, h = 0, w = 0;
};
RopePosition rope_position(std::span<const SequenceImage> images, int64_t row);

}  // namespace qmlx
