#include "modelgen/model_config.h"

namespace qmlx::modelgen {

namespace {

using nlohmann::json;

json dtype_name(TensorDType dtype) {
  switch (dtype) {
    case TensorDType::kBF16:
      return "bfloat16";
    case TensorDType::kF16:
      return "float16";
    default:
      return "float32";
  }
}

json layer_types(const ModelOptions& options) {
  json types = json::array();
  for (int i = 0; i < options.shape.layers; ++i) {
    types.push_back(options.shape.is_full_attention(options.arch, i) ? "full_attention"
                                                                     : "linear_attention");
  }
  return types;
}

// Keys every architecture has.
json common_text_fields(const ModelOptions& options, const SpecialIds& ids) {
  const ModelShape& s = options.shape;
  return {{"hidden_size", s.hidden},
          {"num_hidden_layers", s.layers},
          {"num_attention_heads", s.heads},
          {"num_key_value_heads", s.kv_heads},
          {"head_dim", s.head_dim},
          {"vocab_size", s.vocab},
          {"rms_norm_eps", s.rms_norm_eps},
          {"max_position_embeddings", s.max_position_embeddings},
          {"hidden_act", "silu"},
          {"attention_bias", false},
          {"attention_dropout", 0.0},
          {"initializer_range", 0.02},
          {"use_cache", true},
          {"tie_word_embeddings", s.tie},
          {"bos_token_id", nullptr},
          {"eos_token_id", ids.endoftext},
          {"torch_dtype", dtype_name(options.dtype)}};
}

void add_linear_attention_fields(const ModelShape& s, json& config) {
  config["linear_num_key_heads"] = s.linear_key_heads;
  config["linear_num_value_heads"] = s.linear_value_heads;
  config["linear_key_head_dim"] = s.linear_key_dim;
  config["linear_value_head_dim"] = s.linear_value_dim;
  config["linear_conv_kernel_dim"] = s.conv_kernel;
  config["full_attention_interval"] = s.full_attention_interval;
}

void add_moe_fields(const ModelShape& s, json& config) {
  config["num_experts"] = s.experts;
  config["num_experts_per_tok"] = s.experts_per_tok;
  config["moe_intermediate_size"] = s.moe_intermediate;
  config["shared_expert_intermediate_size"] = s.shared_intermediate;
  config["router_aux_loss_coef"] = 0.001;
  config["output_router_logits"] = false;
}

// With --vision, the tower's shape as transformers' Qwen3_5VisionConfig writes it; without,
// the real model's numbers, as a text-only conversion keeps them (no tower tensors follow).
json vision_config(const ModelOptions& options) {
  const ModelShape& s = options.shape;
  const VisionShape v = s.vision ? s.vision_tower : vision_shape_preset("qwen3.5-35b-a3b");
  return {{"model_type", options.arch == Arch::kQwen35Moe ? "qwen3_5_moe" : "qwen3_5"},
          {"depth", v.depth},
          {"hidden_size", v.hidden},
          {"num_heads", v.heads},
          {"intermediate_size", v.intermediate},
          {"hidden_act", "gelu_pytorch_tanh"},
          {"num_position_embeddings", v.num_position_embeddings},
          {"in_channels", v.in_channels},
          {"out_hidden_size", s.hidden},
          {"patch_size", v.patch},
          {"spatial_merge_size", v.merge},
          {"temporal_patch_size", v.temporal_patch},
          {"initializer_range", 0.02}};
}

json qwen35_config(const ModelOptions& options, const SpecialIds& ids) {
  const ModelShape& s = options.shape;
  const bool moe = options.arch == Arch::kQwen35Moe;
  json text = common_text_fields(options, ids);
  text["model_type"] = moe ? "qwen3_5_moe_text" : "qwen3_5_text";
  add_linear_attention_fields(s, text);
  if (moe) {
    add_moe_fields(s, text);
  } else {
    text["intermediate_size"] = s.intermediate;
  }
  text["layer_types"] = layer_types(options);
  text["attn_output_gate"] = true;
  if (s.mtp) text["mtp_num_hidden_layers"] = 1;
  text["mamba_ssm_dtype"] = "float32";
  text["rope_parameters"] = {{"rope_type", "default"},
                             {"rope_theta", s.rope_theta},
                             {"partial_rotary_factor", s.partial_rotary_factor},
                             {"mrope_section", s.mrope_section(options.arch)},
                             {"mrope_interleaved", true}};
  json config = {{"architectures",
                  {moe ? "Qwen3_5MoeForConditionalGeneration" : "Qwen3_5ForConditionalGeneration"}},
                 {"model_type", moe ? "qwen3_5_moe" : "qwen3_5"},
                 {"text_config", text},
                 {"vision_config", vision_config(options)},
                 // The real file's 248056, 248057, 248053, 248054 are these tokens' ids in
                 // the real tokenizer; a generated model has its own tokenizer.
                 {"image_token_id", ids.image_pad},
                 {"video_token_id", ids.video_pad},
                 {"vision_start_token_id", ids.vision_start},
                 {"vision_end_token_id", ids.vision_end},
                 {"tie_word_embeddings", s.tie}};
  return config;
}

json qwen3_next_config(const ModelOptions& options, const SpecialIds& ids) {
  const ModelShape& s = options.shape;
  json config = common_text_fields(options, ids);
  config["architectures"] = {"Qwen3NextForCausalLM"};
  config["model_type"] = "qwen3_next";
  add_linear_attention_fields(s, config);
  add_moe_fields(s, config);
  config["intermediate_size"] = s.moe_intermediate * 10;  // unused: every layer is MoE
  config["norm_topk_prob"] = true;
  config["decoder_sparse_step"] = 1;
  config["mlp_only_layers"] = json::array();
  config["partial_rotary_factor"] = s.partial_rotary_factor;
  config["rope_theta"] = s.rope_theta;
  config["rope_scaling"] = nullptr;
  if (s.mtp) config["num_nextn_predict_layers"] = 1;
  if (!s.full_attention_layers.empty()) config["layer_types"] = layer_types(options);
  return config;
}

json qwen3_config(const ModelOptions& options, const SpecialIds& ids) {
  const ModelShape& s = options.shape;
  json config = common_text_fields(options, ids);
  config["architectures"] = {"Qwen3ForCausalLM"};
  config["model_type"] = "qwen3";
  config["intermediate_size"] = s.intermediate;
  config["rope_theta"] = s.rope_theta;
  config["rope_scaling"] = nullptr;
  config["sliding_window"] = nullptr;
  config["use_sliding_window"] = false;
  config["max_window_layers"] = s.layers;
  return config;
}

}  // namespace

json model_config_json(const ModelOptions& options, const SpecialIds& ids,
                       const json& quantization) {
  json config;
  switch (options.arch) {
    case Arch::kQwen35Moe:
    case Arch::kQwen35:
      config = qwen35_config(options, ids);
      break;
    case Arch::kQwen3Next:
      config = qwen3_next_config(options, ids);
      break;
    case Arch::kQwen3:
      config = qwen3_config(options, ids);
      break;
  }
  config["transformers_version"] = "4.57.0";
  if (!quantization.is_null()) {
    config["quantization"] = quantization;
    config["quantization_config"] = quantization;
  }
  return config;
}

json generation_config_json(const SpecialIds& ids) {
  return {{"bos_token_id", ids.endoftext},
          {"eos_token_id", {ids.im_end, ids.endoftext}},
          {"pad_token_id", ids.endoftext},
          {"do_sample", true},
          {"temperature", 0.7},
          {"top_p", 0.8},
          {"top_k", 20},
          {"transformers_version", "4.57.0"}};
}

json preprocessor_config_json(const ModelOptions& options) {
  const VisionShape& v = options.shape.vision_tower;
  return {{"image_processor_type", "Qwen2VLImageProcessorFast"},
          {"do_resize", true},
          {"do_rescale", true},
          {"rescale_factor", 1.0 / 255},
          {"do_normalize", true},
          {"do_convert_rgb", true},
          {"image_mean", {0.5, 0.5, 0.5}},
          {"image_std", {0.5, 0.5, 0.5}},
          {"patch_size", v.patch},
          {"temporal_patch_size", v.temporal_patch},
          {"merge_size", v.merge},
          {"min_pixels", v.min_pixels},
          {"max_pixels", v.max_pixels},
          {"size", {{"shortest_edge", v.min_pixels}, {"longest_edge", v.max_pixels}}}};
}

}  // namespace qmlx::modelgen
