// The GGUF weight source: reads a model written the way llama.cpp's converter writes
// `qwen35`, `qwen35moe`, `qwen3next` and `qwen3` files. Hyper-parameters come from the
// `<arch>.*` metadata keys; tensors are mapped from llama.cpp's names back to our layers, with
// its transforms undone: Qwen3.5 value heads go from tiled back to grouped order (rows of
// attn_qkv, attn_gate, ssm_beta/alpha, conv, ssm_a, ssm_dt; out_proj columns via a head order
// applied to its input), Qwen3-Next's ssm_ba is split into b and a. Norms arrive with the +1
// folded in and ssm_a as -exp(A_log), which is the form ModelWeights holds. Matrices stay in
// their stored block form (no dequantization at load).
#pragma once

#include "model/config.h"
#include "model/gguf_file.h"
#include "model/weights.h"

namespace qmlx {

ModelConfig gguf_model_config(const GgufFile& file);
ModelWeights load_gguf_weights(const GgufFile& file, const ModelConfig& config);

}  // namespace qmlx
