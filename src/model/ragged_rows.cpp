// The row layout of a ragged batch (layers.h): where each sequence's rows start, their
// positions, and the RoPE angles of every row.
#include "base/error.h"
#include "model/layers.h"

namespace qmlx {

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
    if (c.rotary_dim > 0)
      for (int t = 0; t < s.count; ++t)
        rows.angles.push_back(rope_angles(s.position + t, c.rotary_dim, c.rope_theta));
  }
  return rows;
}

}  // namespace qmlx
