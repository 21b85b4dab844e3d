#include "modelgen/model_writer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.h"
#include "modelgen/byte_level.h"
#include "modelgen/gguf_model_writer.h"
#include "modelgen/model_config.h"
#include "modelgen/script_model.h"

namespace qmlx::modelgen {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

nlohmann::json safetensors_header(const fs::path& path) {
  const std::string bytes = read_file(path);
  uint64_t size = 0;
  for (int i = 7; i >= 0; --i) size = size << 8 | uint8_t(bytes[i]);
  return nlohmann::json::parse(bytes.substr(8, size));
}

class ModelWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ =
        fs::temp_directory_path() /
        ("qmlx_mw_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  ModelOptions tiny(Arch arch, Layout layout) {
    ModelOptions options;
    options.arch = arch;
    options.layout = layout;
    options.shape = default_shape(arch);
    options.shape.layers = 2;
    options.shape.full_attention_interval = 2;
    return options;
  }
  ModelOptions with_mtp(Arch arch, Layout layout) {
    ModelOptions options = tiny(arch, layout);
    options.shape.mtp = true;
    return options;
  }

  fs::path root_;
};

TEST_F(ModelWriterTest, SameSeedSameBytesOtherSeedOtherWeights) {
  ModelOptions options = tiny(Arch::kQwen35Moe, Layout::kMLX);
  options.quantization = QuantParams{4, 32};
  options.seed = 7;
  write_random_model(options, (root_ / "a").string());
  write_random_model(options, (root_ / "b").string());
  options.seed = 8;
  write_random_model(options, (root_ / "c").string());
  for (const char* file : {"config.json", "tokenizer.json", "tokenizer_config.json",
                           "generation_config.json", "model.safetensors"}) {
    EXPECT_EQ(read_file(root_ / "a" / file), read_file(root_ / "b" / file)) << file;
  }
  EXPECT_NE(read_file(root_ / "a" / "model.safetensors"),
            read_file(root_ / "c" / "model.safetensors"));
}

TEST_F(ModelWriterTest, HuggingFaceQwen35MoeNamesAndShapes) {
  ModelOptions options = tiny(Arch::kQwen35Moe, Layout::kHF);
  write_random_model(options, root_.string());
  const auto header = safetensors_header(root_ / "model.safetensors");
  const auto& s = options.shape;
  const std::string p = "model.language_model.layers.0.";
  EXPECT_EQ(header[p + "linear_attn.conv1d.weight"]["shape"],
            nlohmann::json({2 * s.linear_key_heads * s.linear_key_dim +
                                s.linear_value_heads * s.linear_value_dim,
                            1, s.conv_kernel}));
  EXPECT_EQ(header[p + "mlp.experts.gate_up_proj"]["shape"],
            nlohmann::json({s.experts, 2 * s.moe_intermediate, s.hidden}));
  EXPECT_EQ(header[p + "linear_attn.A_log"]["dtype"], "F32");
  EXPECT_TRUE(header.contains("lm_head.weight"));
  EXPECT_TRUE(header.contains("model.language_model.layers.1.self_attn.q_proj.weight"));
  const auto config = nlohmann::json::parse(read_file(root_ / "config.json"));
  EXPECT_EQ(config["model_type"], "qwen3_5_moe");
  EXPECT_EQ(config["text_config"]["layer_types"],
            nlohmann::json({"linear_attention", "full_attention"}));
}

TEST_F(ModelWriterTest, MlxQwen3NextQuantizedWithGateOverrides) {
  ModelOptions options = tiny(Arch::kQwen3Next, Layout::kMLX);
  options.quantization = QuantParams{4, 64};
  options.shards = 2;
  write_random_model(options, root_.string());
  const auto index = nlohmann::json::parse(read_file(root_ / "model.safetensors.index.json"));
  const auto& map = index["weight_map"];
  EXPECT_TRUE(map.contains("model.layers.0.linear_attn.in_proj_qkvz.weight"));
  EXPECT_TRUE(map.contains("model.layers.0.mlp.switch_mlp.up_proj.scales"));
  EXPECT_TRUE(map.contains("model.embed_tokens.biases"));
  EXPECT_FALSE(map.contains("model.layers.0.linear_attn.conv1d.scales"));
  const auto config = nlohmann::json::parse(read_file(root_ / "config.json"));
  EXPECT_EQ(config["quantization"]["model.layers.0.mlp.gate"],
            nlohmann::json({{"group_size", 64}, {"bits", 8}}));
  EXPECT_EQ(config["quantization"], config["quantization_config"]);
}

// What the real Qwen3.5 files carry for images, with the generated tokenizer's ids and the
// M-RoPE sections scaled to the tiny rotary dimension (8: 4 frequencies).
TEST_F(ModelWriterTest, VisionModelsCarryImageTokensSectionsAndPreprocessorConfig) {
  ModelOptions options = tiny(Arch::kQwen35, Layout::kHF);
  options.shape.vision = true;
  write_random_model(options, root_.string());
  const auto config = nlohmann::json::parse(read_file(root_ / "config.json"));
  const auto tokenizer = nlohmann::json::parse(read_file(root_ / "tokenizer.json"));
  std::map<std::string, int> ids;
  for (const auto& token : tokenizer["added_tokens"]) {
    ids[token["content"].get<std::string>()] = token["id"].get<int>();
    if (token["content"].get<std::string>().find("vision") != std::string::npos) {
      EXPECT_EQ(token["special"], true);
    }
  }
  EXPECT_EQ(config["image_token_id"], ids.at("<|image_pad|>"));
  EXPECT_EQ(config["vision_start_token_id"], ids.at("<|vision_start|>"));
  EXPECT_EQ(config["vision_end_token_id"], ids.at("<|vision_end|>"));
  const auto& rope = config["text_config"]["rope_parameters"];
  EXPECT_EQ(rope["mrope_section"], nlohmann::json({2, 1, 1}));
  EXPECT_EQ(rope["mrope_interleaved"], true);
  const auto pre = nlohmann::json::parse(read_file(root_ / "preprocessor_config.json"));
  EXPECT_EQ(pre["patch_size"], 16);
  EXPECT_EQ(pre["temporal_patch_size"], 2);
  EXPECT_EQ(pre["merge_size"], 2);
  EXPECT_EQ(pre["image_mean"], nlohmann::json({0.5, 0.5, 0.5}));
  EXPECT_LT(pre["min_pixels"].get<int>(), pre["max_pixels"].get<int>());
}

// --vision-shape qwen3.5-35b-a3b: the real tower's config and the processor's real pixel
// bounds (a 1920 x 1080 screenshot becomes 8,160 patches), the language model's width kept as
// the merger's output. The files themselves (0.8 GB) are left to bench/vision.
TEST(VisionShapePreset, RealTowerConfigAndPreprocessorBounds) {
  ModelOptions options;
  options.arch = Arch::kQwen35Moe;
  options.shape.vision = true;
  options.shape.vision_tower = vision_shape_preset("qwen3.5-35b-a3b");
  const auto vision = model_config_json(options, SpecialIds{}, nullptr)["vision_config"];
  EXPECT_EQ(vision["depth"], 27);
  EXPECT_EQ(vision["hidden_size"], 1152);
  EXPECT_EQ(vision["num_heads"], 16);
  EXPECT_EQ(vision["intermediate_size"], 4304);
  EXPECT_EQ(vision["num_position_embeddings"], 2304);
  EXPECT_EQ(vision["out_hidden_size"], options.shape.hidden);
  const auto pre = preprocessor_config_json(options);
  EXPECT_EQ(pre["min_pixels"], 65536);
  EXPECT_EQ(pre["max_pixels"], 16777216);
  EXPECT_EQ(pre["size"]["longest_edge"], 16777216);
  EXPECT_THROW(vision_shape_preset("qwen3.5-9000b"), Error);
}

TEST_F(ModelWriterTest, TokenizerHasBytesMergesAndQwenSpecials) {
  write_random_model(tiny(Arch::kQwen3, Layout::kHF), root_.string());
  const auto tokenizer = nlohmann::json::parse(read_file(root_ / "tokenizer.json"));
  const auto& vocab = tokenizer["model"]["vocab"];
  EXPECT_EQ(vocab["!"], 0);
  for (int byte = 0; byte < 256; ++byte) {
    EXPECT_TRUE(vocab.contains(byte_symbol(static_cast<unsigned char>(byte)))) << byte;
  }
  const auto& merges = tokenizer["model"]["merges"];
  EXPECT_GE(merges.size(), 200u);
  for (const auto& merge : merges) {
    EXPECT_TRUE(vocab.contains(merge[0].get<std::string>() + merge[1].get<std::string>()));
  }
  const auto& added = tokenizer["added_tokens"];
  ASSERT_EQ(added.size(), 13u);
  EXPECT_EQ(added[2]["content"], "<|im_end|>");
  EXPECT_EQ(added[2]["special"], true);
  EXPECT_EQ(added[7]["content"], "<think>");
  EXPECT_EQ(added[7]["special"], false);
  EXPECT_EQ(added[11]["content"], "<|image_pad|>");
  EXPECT_EQ(added[11]["special"], true);
  EXPECT_EQ(added[0]["id"], vocab.size());
  const auto config = nlohmann::json::parse(read_file(root_ / "tokenizer_config.json"));
  EXPECT_EQ(config["eos_token"], "<|im_end|>");
  EXPECT_TRUE(config["bos_token"].is_null());
  EXPECT_FALSE(config["chat_template"].get<std::string>().empty());
}

// `make-model --mtp`: the MTP head in each layout; Qwen3 has none.
TEST_F(ModelWriterTest, MtpHeadAtTopLevelInHuggingFaceFiles) {
  const ModelOptions options = with_mtp(Arch::kQwen35, Layout::kHF);
  write_random_model(options, root_.string());
  const auto header = safetensors_header(root_ / "model.safetensors");
  const int H = options.shape.hidden;
  EXPECT_EQ(header["mtp.fc.weight"]["shape"], nlohmann::json({H, 2 * H}));
  for (const char* name :
       {"mtp.pre_fc_norm_embedding.weight", "mtp.pre_fc_norm_hidden.weight", "mtp.norm.weight",
        "mtp.layers.0.self_attn.q_proj.weight", "mtp.layers.0.mlp.down_proj.weight"})
    EXPECT_TRUE(header.contains(name)) << name;
  const auto config = nlohmann::json::parse(read_file(root_ / "config.json"));
  EXPECT_EQ(config["text_config"]["mtp_num_hidden_layers"], 1);
  EXPECT_EQ(config["text_config"]["num_hidden_layers"], options.shape.layers);
}

TEST_F(ModelWriterTest, MtpHeadInMlxFilesQuantizedWithItsRouterOverride) {
  ModelOptions options = with_mtp(Arch::kQwen35Moe, Layout::kMLX);
  options.quantization = QuantParams{4, 64};
  write_random_model(options, root_.string());
  const auto header = safetensors_header(root_ / "model.safetensors");
  EXPECT_TRUE(header.contains("language_model.mtp.fc.scales"));
  EXPECT_TRUE(header.contains("language_model.mtp.layers.0.mlp.switch_mlp.up_proj.scales"));
  EXPECT_FALSE(header.contains("language_model.mtp.norm.scales"));
  const auto config = nlohmann::json::parse(read_file(root_ / "config.json"));
  EXPECT_EQ(config["quantization"]["language_model.mtp.layers.0.mlp.gate"],
            nlohmann::json({{"group_size", 64}, {"bits", 8}}));
}

TEST_F(ModelWriterTest, NoMtpHeadForQwen3) {
  EXPECT_THROW(write_random_model(with_mtp(Arch::kQwen3, Layout::kHF), root_.string()), Error);
  EXPECT_THROW(write_random_gguf_model(with_mtp(Arch::kQwen3, Layout::kHF),
                                       parse_gguf_recipe("f32"), (root_ / "m.gguf").string()),
               Error);
}

TEST_F(ModelWriterTest, OmittedTensorsAreLeftOutAndMustExist) {
  ModelOptions options = with_mtp(Arch::kQwen35, Layout::kHF);
  options.omit_tensors = {"mtp.norm.weight", "model.language_model.norm.weight"};
  write_random_model(options, (root_ / "hf").string());
  const auto header = safetensors_header(root_ / "hf" / "model.safetensors");
  EXPECT_FALSE(header.contains("mtp.norm.weight"));
  EXPECT_FALSE(header.contains("model.language_model.norm.weight"));
  EXPECT_TRUE(header.contains("mtp.fc.weight"));

  options.omit_tensors = {"blk.2.nextn.enorm.weight"};
  write_random_gguf_model(options, parse_gguf_recipe("f32"), (root_ / "m.gguf").string());
  const std::string gguf = read_file(root_ / "m.gguf");
  EXPECT_EQ(gguf.find("blk.2.nextn.enorm.weight"), std::string::npos);
  EXPECT_NE(gguf.find("blk.2.nextn.hnorm.weight"), std::string::npos);

  // A misspelt name is an error, not a whole model.
  options.omit_tensors = {"mtp.nrom.weight"};
  EXPECT_THROW(write_random_model(options, (root_ / "typo").string()), Error);
  EXPECT_THROW(
      write_random_gguf_model(options, parse_gguf_recipe("f32"), (root_ / "t.gguf").string()),
      Error);
}

TEST(ScriptModel, SplitKeepsTextAndSpecials) {
  const std::string script =
      "<think>\nLet me call it.\n</think>\n\n<tool_call>\n{\"name\": \"f\"}\n</tool_call>";
  const auto steps = split_script(script);
  std::string joined;
  int specials = 0;
  for (const auto& step : steps) {
    joined += step.text;
    specials += step.special;
  }
  EXPECT_EQ(joined, script);
  EXPECT_EQ(specials, 4);
  EXPECT_TRUE(steps.front().special);
  EXPECT_EQ(steps.front().text, "<think>");
}

TEST(ScriptModel, RejectsAContextWithTwoContinuations) {
  const auto dir = fs::temp_directory_path() / "qmlx_script_conflict";
  // Two adjacent <think> tokens with nothing new between them: the first must be followed by
  // <think>, the second by "x", and their contexts are identical.
  EXPECT_THROW(write_script_model("<think><think>x", {}, dir.string()), std::exception);
  // Repeated text is fine: pieces grow until they are new, so each has its own context.
  const std::string call = "<tool_call>\n{\"name\": \"f\"}\n</tool_call>\n";
  EXPECT_NO_THROW(write_script_model(call + call + "x", {}, dir.string()));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace qmlx::modelgen
