// Writes a model as one GGUF v3 file the way llama.cpp's convert_hf_to_gguf.py (and
// llama-quantize, for the block types) would: architecture `qwen35`, `qwen35moe`, `qwen3next`
// or `qwen3`; llama.cpp's tensor names (token_embd, blk.N.attn_qkv, ffn_gate_exps, ...) and
// metadata keys; its transforms (norm multipliers with the +1 folded in, ssm_a = -exp(A_log),
// conv1d as [CD, K], Qwen3-Next qkvz de-interleaved into attn_qkv + attn_gate, and for Qwen3.5
// the value heads permuted from grouped to tiled order); 1-D tensors, conv1d and the MoE
// router kept in F32; the MTP head as block n_layer with nextn.* tensors and
// {arch}.nextn_predict_layers (as llama.cpp's _Qwen35MtpMixin / _QwenMtpMixin write it); and the
// tokenizer as tokenizer.ggml.* (gpt2 BPE, pre "qwen2"/"qwen35").
#pragma once

#include <string>

#include "modelgen/gguf_quantizer.h"
#include "modelgen/logical_model.h"
#include "modelgen/model_options.h"
#include "modelgen/tokenizer_files.h"

namespace qmlx::modelgen {

struct GgufRecipe {
  GgufQuant type = GgufQuant::kF32;
  // llama-quantize's Q4_K_M-style mix: Q6_K for the LM head and for attn_v / ffn_down in the
  // first and last eighth of the layers and every third layer between.
  bool k_mix = false;
};

// "f32", "q8_0", "q4_k", ..., or "q4_k_m" (Q4_K with the mix); throws qmlx::Error otherwise.
GgufRecipe parse_gguf_recipe(const std::string& name);

void write_gguf_model(const ModelOptions& options, const GgufRecipe& recipe,
                      const LogicalModel& weights, const Vocabulary& vocabulary,
                      const std::string& chat_template, const std::string& path);

// Random weights from options.seed (the same as write_random_model's), demo vocabulary.
void write_random_gguf_model(const ModelOptions& options, const GgufRecipe& recipe,
                             const std::string& path);

}  // namespace qmlx::modelgen
