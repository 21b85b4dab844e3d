// `make-model --mtp`: the MTP head's names, shapes and config keys in each layout, and the
// combinations that have no head to write.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.h"
#include "modelgen/gguf_model_writer.h"
#include "modelgen/model_writer.h"

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

class MtpWriterTest : public ::testing::Test {
 protected:
  void TearDown() override { fs::remove_all(root_); }
  ModelOptions with_mtp(Arch arch, Layout layout) {
    ModelOptions options;
    options.arch = arch;
    options.layout = layout;
    options.shape = default_shape(arch);
    options.shape.mtp = true;
    return options;
  }
  fs::path root_ = fs::temp_directory_path() / "qmlx_mtp_writer";
};

TEST_F(MtpWriterTest, HuggingFaceHeadAtTopLevel) {
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

TEST_F(MtpWriterTest, MlxHeadQuantizedWithItsRouterOverride) {
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

TEST_F(MtpWriterTest, NoHeadWhereTheFormatHasNone) {
  EXPECT_THROW(write_random_model(with_mtp(Arch::kQwen3, Layout::kHF), root_.string()), Error);
  EXPECT_THROW(write_random_gguf_model(with_mtp(Arch::kQwen3Next, Layout::kHF),
                                       parse_gguf_recipe("f32"), (root_ / "m.gguf").string()),
               Error);
}

}  // namespace
}  // namespace qmlx::modelgen
