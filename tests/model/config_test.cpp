#include "model/config.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace qmlx {
namespace {

using nlohmann::json;

json qwen3_5_config() {
  return json::parse(R"({
    "model_type": "qwen3_5", "tie_word_embeddings": true,
    "quantization": {"group_size": 64, "bits": 4, "mode": "affine",
                     "language_model.model.layers.0.mlp.gate": {"group_size": 64, "bits": 8},
                     "language_model.model.layers.1.mlp.gate": false},
    "text_config": {"model_type": "qwen3_5_text", "hidden_size": 1024, "num_hidden_layers": 4,
      "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 256,
      "linear_num_key_heads": 16, "linear_num_value_heads": 16, "linear_key_head_dim": 128,
      "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4, "intermediate_size": 3584,
      "vocab_size": 248320, "rms_norm_eps": 1e-6,
      "layer_types": ["linear_attention", "full_attention", "linear_attention", "full_attention"],
      "rope_parameters": {"rope_type": "default", "rope_theta": 10000000,
                          "partial_rotary_factor": 0.25}}})");
}

TEST(ConfigTest, Qwen3_5ReadsTextConfigRopeParametersAndQuantization) {
  ModelConfig c = ModelConfig::from_json(qwen3_5_config(), "config.json");
  EXPECT_EQ(c.arch, Architecture::kQwen3_5);
  EXPECT_EQ(c.hidden_size, 1024);
  EXPECT_EQ(c.rotary_dim, 64);
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e7);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.full_attention, (std::vector<bool>{false, true, false, true}));
  json text_says_untied = qwen3_5_config();
  text_says_untied["text_config"]["tie_word_embeddings"] = false;
  EXPECT_TRUE(ModelConfig::from_json(text_says_untied, "config.json").tie_word_embeddings);
  EXPECT_EQ(c.conv_channels(), 2 * 16 * 128 + 16 * 128);
  EXPECT_FALSE(c.is_moe_layer(0));
  ASSERT_TRUE(c.quantization.present);
  EXPECT_EQ(c.quantization.params_for("language_model.model.layers.0.mlp.gate").bits, 8);
  EXPECT_EQ(c.quantization.params_for("language_model.model.layers.2.mlp.up_proj").bits, 4);
  EXPECT_EQ(c.quantization.global.group_size, 64);
}

TEST(ConfigTest, Qwen3_5ReadsMropeSectionsAndTheImageToken) {
  json j = qwen3_5_config();
  ModelConfig plain = ModelConfig::from_json(j, "config.json");
  EXPECT_TRUE(plain.mrope_section.empty());
  EXPECT_EQ(plain.image_token_id, -1);
  json& rope = j["text_config"]["rope_parameters"];
  rope["mrope_section"] = {11, 11, 10};
  rope["mrope_interleaved"] = true;
  j["image_token_id"] = 248056;
  ModelConfig c = ModelConfig::from_json(j, "config.json");
  EXPECT_EQ(c.mrope_section, (std::vector<int>{11, 11, 10}));
  EXPECT_TRUE(c.mrope_interleaved);
  EXPECT_EQ(c.image_token_id, 248056);
  // Interleaved sections need not cover rotary_dim / 2 (transformers slices up to 3 x each);
  // contiguous ones must, and malformed ones are refused.
  rope["mrope_section"] = {24, 20, 20};
  EXPECT_EQ(ModelConfig::from_json(j, "config.json").mrope_section.size(), 3u);
  rope["mrope_interleaved"] = false;
  EXPECT_THROW(ModelConfig::from_json(j, "config.json"), Error);
  rope["mrope_section"] = {16, 8, 8};
  EXPECT_FALSE(ModelConfig::from_json(j, "config.json").mrope_interleaved);
  for (const json& bad : {json{11, 11}, json{11, -1, 22}, json("11,11,10")}) {
    rope["mrope_section"] = bad;
    EXPECT_THROW(ModelConfig::from_json(j, "config.json"), Error) << bad.dump();
  }
}

TEST(ConfigTest, Qwen3_5VisionConfigTakesTransformersDefaultsAndRejectsBadShapes) {
  json j = qwen3_5_config();
  j["vision_config"] = {{"depth", 24}, {"hidden_size", 1024}, {"out_hidden_size", 2048}};
  ModelConfig c = ModelConfig::from_json(j, "config.json");
  ASSERT_TRUE(c.vision.has_value());
  EXPECT_EQ(c.vision->depth, 24);
  EXPECT_EQ(c.vision->num_heads, 16);  // transformers' default
  EXPECT_EQ(c.vision->head_dim(), 64);
  EXPECT_EQ(c.vision->patch_dim(), 3 * 2 * 16 * 16);
  EXPECT_EQ(c.vision->grid_side(), 48);  // 2304 position embeddings
  EXPECT_TRUE(c.vision->mlp_gelu_tanh);

  // A vision_config that does not parse leaves the text model loadable and says why.
  for (const json& bad : {json{{"hidden_act", "relu"}}, json{{"num_position_embeddings", 50}},
                          json{{"hidden_size", 1000}}, json{{"depth", "two"}}}) {
    j["vision_config"] = bad;
    c = ModelConfig::from_json(j, "config.json");
    EXPECT_FALSE(c.vision.has_value()) << bad.dump();
    EXPECT_NE(c.vision_config_error.find("config.json: vision_config"), std::string::npos)
        << c.vision_config_error;
  }
  j.erase("vision_config");
  EXPECT_FALSE(ModelConfig::from_json(j, "config.json").vision.has_value());
}

TEST(ConfigTest, Qwen3NextFlatWithIntervalAndTopLevelPartialRotary) {
  json j = {{"model_type", "qwen3_next"},
            {"hidden_size", 2048},
            {"num_hidden_layers", 8},
            {"num_attention_heads", 16},
            {"num_key_value_heads", 2},
            {"head_dim", 256},
            {"linear_num_key_heads", 16},
            {"linear_num_value_heads", 32},
            {"linear_key_head_dim", 128},
            {"linear_value_head_dim", 128},
            {"vocab_size", 151936},
            {"partial_rotary_factor", 0.5},
            {"rope_theta", 1e6},
            {"full_attention_interval", 4},
            {"num_experts", 512},
            {"num_experts_per_tok", 10},
            {"moe_intermediate_size", 512},
            {"shared_expert_intermediate_size", 512},
            {"norm_topk_prob", false},
            {"decoder_sparse_step", 1},
            {"mlp_only_layers", {2}}};
  ModelConfig c = ModelConfig::from_json(j, "config.json");
  EXPECT_EQ(c.arch, Architecture::kQwen3Next);
  EXPECT_EQ(c.rotary_dim, 128);
  EXPECT_EQ(c.full_attention,
            (std::vector<bool>{false, false, false, true, false, false, false, true}));
  EXPECT_FALSE(c.norm_topk_prob);
  EXPECT_TRUE(c.is_moe_layer(1));
  EXPECT_FALSE(c.is_moe_layer(2));
  EXPECT_FALSE(c.tie_word_embeddings);
}

TEST(ConfigTest, Qwen3DefaultsToFullRotaryAndAllAttention) {
  json j = {{"model_type", "qwen3"},     {"hidden_size", 1024},      {"num_hidden_layers", 3},
            {"num_attention_heads", 16}, {"num_key_value_heads", 8}, {"head_dim", 128},
            {"vocab_size", 151936},      {"rope_theta", 1e6},        {"tie_word_embeddings", true},
            {"intermediate_size", 3072}};
  ModelConfig c = ModelConfig::from_json(j, "config.json");
  EXPECT_EQ(c.rotary_dim, 128);
  EXPECT_EQ(c.full_attention, std::vector<bool>(3, true));
  EXPECT_FALSE(c.hybrid());
}

TEST(ConfigTest, Qwen3_5MoeAlwaysRenormalises) {
  json j = qwen3_5_config();
  j["model_type"] = "qwen3_5_moe";
  j["text_config"]["num_experts"] = 8;
  j["text_config"]["num_experts_per_tok"] = 2;
  j["text_config"]["norm_topk_prob"] = false;
  ModelConfig c = ModelConfig::from_json(j, "config.json");
  EXPECT_TRUE(c.norm_topk_prob);
  EXPECT_TRUE(c.is_moe_layer(0));
}

TEST(ConfigTest, ErrorsNameTheFileAndField) {
  json unknown = {{"model_type", "llama"}};
  try {
    ModelConfig::from_json(unknown, "/m/config.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/m/config.json"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("llama"), std::string::npos);
  }
  json missing = qwen3_5_config();
  missing["text_config"].erase("hidden_size");
  try {
    ModelConfig::from_json(missing, "/m/config.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("hidden_size"), std::string::npos);
  }
  EXPECT_THROW(ModelConfig::load("/nonexistent/dir"), Error);
}

}  // namespace
}  // namespace qmlx
