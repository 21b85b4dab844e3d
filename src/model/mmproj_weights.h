// The vision tower of a llama.cpp mmproj file: the separate GGUF (`general.architecture` clip)
// that llama.cpp's converter writes for a Qwen3-VL / Qwen3.5 checkpoint's tower, given to
// `qmlx serve --mmproj FILE` (ModelLoadOptions::mmproj).
//
// Metadata: clip.projector_type (or clip.vision.projector_type) qwen3vl_merger;
// clip.vision.{embedding_length, feed_forward_length, block_count, attention.head_count,
// patch_size, spatial_merge_size, projection_dim (the language model's width),
// attention.layer_norm_epsilon}; clip.use_gelu (the blocks' tanh GELU; clip.use_silu is not a
// Qwen tower). The channel count and the position grid come from the tensors' shapes.
// Tensors (ggml dims reversed from these):
//   v.patch_embd.weight, v.patch_embd.weight.1  the Conv3d's two temporal slices, each a
//                                               [hidden, channels, patch, patch] Conv2d kernel
//   v.patch_embd.bias, v.position_embd.weight [num_position_embeddings, hidden]
//   v.blk.N.{ln1, ln2}.{weight,bias}           norm1, norm2
//   v.blk.N.attn_qkv.{weight,bias}, v.blk.N.attn_out.{weight,bias}
//   v.blk.N.ffn_up.{weight,bias}, v.blk.N.ffn_down.{weight,bias}   mlp.linear_fc1, linear_fc2
//   v.post_ln.{weight,bias}                    merger.norm (per patch, before the 2 x 2 join)
//   mm.0.{weight,bias}, mm.2.{weight,bias}     merger.linear_fc1, linear_fc2
// Matrices in F32, F16, BF16 or a GGUF block type; 1-D tensors of any type, read as float.
#pragma once

#include <optional>
#include <string>

#include "model/gguf_file.h"
#include "model/vision_weights.h"
#include "model/weights.h"

namespace qmlx {

// The tower in `file` when it is a whole Qwen3-VL-style one whose output width is
// `hidden_size`. Otherwise (another projector, a missing or malformed tensor or key, an
// unexpected tensor such as Qwen3-VL's DeepStack mergers, a width that does not fit) none,
// with one warning, and `dropped` says why (optional_parts.h). Bytes copied at load (the
// patch embedding's two temporal slices joined) are owned by `owner`.
std::optional<VisionWeights> load_mmproj_vision(const GgufFile& file, int hidden_size,
                                                ModelWeights& owner, std::string& dropped);

}  // namespace qmlx
