// Moving a weight matrix's columns in whole blocks, once at load: llama.cpp's Qwen3.5 GGUF files
// keep out_proj's input heads in a tiled order, which the CPU undoes by permuting each token's
// activations (delta_net_layer.cpp); a device does better with the columns moved in the
// weights. GGUF blocks cannot be cut at a head (a 256-value super-block spans two of 128), so
// they are first rewritten as affine rows (kernels/gguf_affine.h), whose groups of 16 or 32 can.
#pragma once

#include <vector>

#include "kernels/gguf_affine.h"

namespace qmlx {

// w with block i of every row's columns (columns [i * block, (i + 1) * block)) moved to block
// to[i]; to is a permutation of cols / block blocks. Float formats keep theirs; affine rows
// and GGUF blocks come out as affine rows. Throws qmlx::Error when a block would cut a
// quantization group or a byte of codes.
OwnedMatrix move_column_blocks(const WeightMatrix& w, int block, const std::vector<int>& to);

}  // namespace qmlx
