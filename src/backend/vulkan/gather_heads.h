// Reordering the heads of each row on the device (shaders/gather_heads.comp): out row t, head i
// = in row t, head order[i], each head n floats copied as they are. llama.cpp's Qwen3.5 GGUF
// files keep out_proj's input columns in a tiled head order that their quantized blocks cannot
// be moved out of (a 256-value block spans two 128-wide heads), so the forward pass moves the
// activations into the file's order instead, as the CPU does (delta_net_layer.cpp).
#pragma once

#include "backend/vulkan/command_recorder.h"

namespace qmlx::vulkan {

// in, out: [rows][heads][n] floats from offset 0 (distinct buffers); order: `heads` int32, a
// permutation of [0, heads) (checked where it is made; an index outside reads nothing past the
// row's own heads: it is taken modulo `heads`).
void record_gather_heads(CommandRecorder& recorder, const Buffer& in, const Buffer& order, int rows,
                         int heads, int n, const Buffer& out);

}  // namespace qmlx::vulkan
