// Taking a weight matrix's columns in whole blocks, once at load, for a device that does better
// with the columns arranged in the weights than with activations rearranged every step:
// llama.cpp's Qwen3.5 GGUF files keep out_proj's input heads in a tiled order (the CPU permutes
// each token's activations, delta_net_layer.cpp), and the MTP head's fc reads [embedding |
// hidden] (one half each, so the two inputs need not be joined). GGUF blocks cannot be cut at a
// head (a 256-value super-block spans two of 128), so they are first rewritten as affine rows
// (kernels/gguf_affine.h), whose groups of 16 or 32 can.
#pragma once

#include <string>
#include <vector>

#include "kernels/gguf_affine.h"

namespace qmlx {

// Why w's columns cannot be taken in blocks of `block` ("" when they can): a block would cut
// a quantization group or a byte of codes of the affine rows it is (or is rewritten to).
std::string column_blocks_refusal(const WeightMatrix& w, int block);

// A matrix of w's rows whose block j of columns is w's block from[j] (block i: columns
// [i * block, (i + 1) * block)); any blocks, in any order. Float formats keep theirs; affine rows
// and GGUF blocks come out as affine rows. Throws qmlx::Error with column_blocks_refusal's
// reason.
OwnedMatrix gather_column_blocks(const WeightMatrix& w, int block, const std::vector<int>& from);

}  // namespace qmlx
