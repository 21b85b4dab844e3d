// How the rows of one forward call meet the images of their sequence (model/sequence_image.h):
// which rows are fed an image's embedding row instead of a token's, and the M-RoPE position of
// each row. A call may start or end inside an image; the state carries the rope_delta of the
// text rows across calls, so a call needs only the images that overlap its rows (earlier ones
// are in the delta), though it may be given them all.
#pragma once

#include <cstdint>
#include <span>

#include "model/sequence_image.h"

namespace qmlx {

// The image whose pad rows hold `row`, or null.
const SequenceImage* image_at(std::span<const SequenceImage> images, int64_t row);

// The M-RoPE position of `row`, where `delta` is the rope_delta of text rows at it; `delta`
// becomes the rope_delta after the row (it changes where `row` is the last pad of an image).
RopePosition next_rope_position(std::span<const SequenceImage> images, int64_t row, int64_t& delta);

// Throws qmlx::Error unless every image holding one of rows [first_row, first_row + count) has
// embeddings of rows() x hidden floats.
void check_image_embeddings(std::span<const SequenceImage> images, int64_t first_row, int64_t count,
                            int hidden);

// Overwrites the rows of `out` ([count][hidden], sequence rows [first_row, + count)) that lie in
// an image with that image's embedding rows (checked by check_image_embeddings first).
void place_image_rows(std::span<const SequenceImage> images, int64_t first_row, int64_t count,
                      int hidden, float* out);

}  // namespace qmlx
