// The row layout of a ragged batch (layers.h): where each sequence's rows start, their
// positions, and the RoPE angles of every row: plain RoPE where a row's three M-RoPE positions
// agree (every text row), so text is computed exactly as without images.
#include "base/error.h"
#include "model/image_rows.h"
#include "model/layers.h"

namespace qmlx {

RopeAngles rope_angles_at(const RopePosition& p, const ModelConfig& c) {
  if (p.t == p.h && p.h == p.w) return rope_angles(p.t, c.rotary_dim, c.rope_theta);
  if (c.mrope_section.empty())
    throw Error("an image row needs M-RoPE, and the model's config has no mrope_section");
  return mrope_angles(p.t, p.h, p.w, c.rotary_dim, c.rope_theta, c.mrope_section,
                      c.mrope_interleaved);
}

RaggedRows ragged_rows(std::vector<SequenceRows> sequences, const ModelConfig& c) {
  RaggedRows rows;
  rows.sequences = std::move(sequences);
  for (SequenceRows& s : rows.sequences) {
    if (s.kind == RowKind::kPrompt && rows.generated > 0)
      throw Error("ragged_rows: prompt rows must come before generated rows");
    s.first = rows.total;
    s.position = s.state->position;
    rows.total += s.count;
    if (s.kind == RowKind::kGenerated) rows.generated += s.count;
    int64_t delta = s.state->rope_delta;
    for (int t = 0; t < s.count; ++t) {
      const RopePosition p = next_rope_position(s.images, s.position + t, delta);
      if (c.rotary_dim > 0) rows.angles.push_back(rope_angles_at(p, c));
    }
    s.rope_delta_after = delta;
  }
  return rows;
}

}  // namespace qmlx
