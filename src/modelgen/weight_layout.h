// Weight layout: turns a LogicalModel into the tensors of a real checkpoint.
//  - Hugging Face: `model.language_model.` (Qwen3.5) or `model.` prefixes, conv1d [CD,1,K],
//    zero-centred norms stored raw (w = multiplier - 1), Qwen3.5-MoE fused
//    `experts.gate_up_proj` [E,2I,H] / `experts.down_proj` [E,H,I], Qwen3-Next per-expert
//    weights and `in_proj_qkvz` / `in_proj_ba` interleaved per key-head group.
//  - mlx-community: `language_model.model.` (Qwen3.5) or `model.` prefixes, conv1d [CD,K,1],
//    norms with the +1 folded in, stacked `switch_mlp.*`, and optionally MLX affine
//    quantization of every Linear/Embedding whose input dim divides by the group size, with
//    the router and shared-expert gate at 8 bits / group 64 as mlx-lm does.
//  - An MTP head (`mtp.*`) is laid out like a layer: at the top level in HF files (where vLLM
//    reads it), under `language_model.mtp.` in MLX Qwen3.5 files and `mtp.` in MLX Qwen3-Next.
//  - A vision tower (`visual.*`) goes under `model.visual.` in HF files, tensor for tensor, and
//    under `vision_tower.` in MLX files as mlx-vlm writes it (unquantized, the patch
//    embedding's Conv3d channels-last: [hidden, temporal, patch, patch, channels]).
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "modelgen/logical_model.h"
#include "modelgen/model_options.h"
#include "modelgen/safetensors_writer.h"

namespace qmlx::modelgen {

struct LaidOutWeights {
  std::vector<TensorEntry> tensors;
  // The config.json "quantization" block (null when the model is not quantized).
  nlohmann::json quantization;
};

LaidOutWeights lay_out_weights(const LogicalModel& model, const ModelOptions& options);

}  // namespace qmlx::modelgen
