// Writes a model's vision tower as a llama.cpp mmproj GGUF, the way llama.cpp's converter
// (Qwen3VLVisionModel, which Qwen3.5 checkpoints use) writes one: general.architecture clip,
// projector qwen3vl_merger and the clip.vision.* keys; v.patch_embd.weight / .weight.1 (the
// Conv3d's two temporal slices as Conv2d kernels), v.position_embd, v.blk.N.{ln1, ln2,
// attn_qkv, attn_out, ffn_up, ffn_down}, v.post_ln (the merger's norm) and mm.0 / mm.2 (its
// two Linear layers). Matrices in the options' dtype (f32, f16 or bf16), or in `matrices` when
// given (a GGUF type such as Q8_0: the converter's --outtype q8_0); biases, norms and the
// position grid in F32 and the patch embedding in F16 (an f16 file) or F32, as the converter
// writes them, holding the values the dtype rounds them to.
// The tower is the same LogicalModel's `visual.*` tensors the safetensors layouts write, so a
// model folder and its mmproj hold one tower.
#pragma once

#include <optional>
#include <string>

#include "modelgen/gguf_quantizer.h"
#include "modelgen/logical_model.h"
#include "modelgen/model_options.h"

namespace qmlx::modelgen {

// True for a tensor name of an mmproj file ("v.*", "mm.*"): --omit-tensor names meant for it.
bool is_mmproj_tensor(const std::string& name);

// options.shape.vision must be set; options.omit_tensors names mmproj tensors to leave out.
void write_mmproj(const ModelOptions& options, const LogicalModel& weights, const std::string& path,
                  std::optional<GgufQuant> matrices = std::nullopt);

// The tower of the random model of `options` (the same as write_random_model's).
void write_random_mmproj(const ModelOptions& options, const std::string& path,
                         std::optional<GgufQuant> matrices = std::nullopt);

}  // namespace qmlx::modelgen
