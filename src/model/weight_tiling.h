// Tiling a loaded model's matrices (kernels/affine_tiles.h) for the decode GEMV: every MLX 4- and
// 8-bit and GGUF Q8_0 matrix a decode step reads (the routed experts excepted: the few-token
// expert kernel reads them row by row) is copied into 16-row tiles, and the pages of the file it was
// read from are given back, so the model still takes its size once in memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "model/weights.h"

namespace qmlx {

// A byte range: a mapped tensor, or what a tiled matrix was copied from.
struct ByteRange {
  const uint8_t* data = nullptr;
  size_t bytes = 0;
};

// Tiles the eligible matrices of `weights` (a tied head and embedding once), reporting the
// source bytes read so far. Ranges inside `mapped` (the checkpoint's mapping) are released
// once copied; owned copies nothing points into any more are freed. Returns the source ranges
// copied (every one of them, mapped or not), merged().
std::vector<ByteRange> tile_affine_weights(ModelWeights& weights,
                                           const std::vector<ByteRange>& mapped,
                                           const std::function<void(uint64_t)>& progress);

// The union of `ranges` as sorted, disjoint ranges.
std::vector<ByteRange> merged(std::vector<ByteRange> ranges);

// True when [r.data, r.data + r.bytes) lies inside `ranges` (merged()): a binary search.
bool covered_by(const ByteRange& r, const std::vector<ByteRange>& ranges);

}  // namespace qmlx
