// RowInputs: what the host hands the device about the rows of one forward call, besides the
// weights and states: each row's token and position, where its RoPE angles come from, and
// which rows take an image's embedding instead of their token's. Text rows at their own
// positions need nothing more than the positions; Qwen3.5's M-RoPE moves text after an image
// (the state's rope_delta) and gives image rows angles no position has, which are computed
// here on the host with the CPU's own functions (model/image_rows.h, layers.h's
// rope_angles_at), so the device rotates every row by the very factors the CPU uses.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/config.h"
#include "model/sequence_image.h"

namespace qmlx::vulkan {

struct RowInputs {
  // A run of call rows fed an image's embedding rows ([count][hidden] floats at `values`).
  struct ImageRows {
    int first = 0, count = 0;
    const float* values = nullptr;
  };

  std::vector<int32_t> ids;
  std::vector<int32_t> positions;  // each row's position in its sequence: K/V row, causal mask
  // Each row's RoPE: a row of the position table, or -1 - j for row j of own_angles.
  std::vector<int32_t> rope_rows;
  std::vector<float> own_angles;  // [j][cos | sin], rotary_dim floats a row
  std::vector<ImageRows> images;
  int64_t table_positions = 0;  // the RoPE table must cover positions [0, this)

  // True when every row's RoPE is the table row at its position: the positions serve as the
  // RoPE index and the call needs no index or angles of its own.
  bool plain_rope() const { return rope_rows == positions; }
};

// Appends one sequence's rows: `tokens` at positions [position, position + n); M-RoPE positions
// from `images` (absolute rows) from `rope_delta` on, which becomes the delta after these rows;
// the rows of an image fed its embeddings, taking sequence row `embed_row + t` for row t (the
// MTP head embeds the token after each position, one row on). Throws qmlx::Error, before the
// caller changes anything, when a position does not fit the shaders' int32, or an image these
// rows reach lacks its embeddings or needs an M-RoPE the config does not have.
void add_sequence_rows(RowInputs& rows, std::span<const int32_t> tokens, int64_t position,
                       int64_t embed_row, std::span<const SequenceImage> images,
                       int64_t& rope_delta, const ModelConfig& c);

}  // namespace qmlx::vulkan
