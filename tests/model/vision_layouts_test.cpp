// The vision tower in each layout the engine reads (model/vision_weights.h): the same random
// tower written as Hugging Face files, as mlx-vlm's `vision_tower.*` (the patch embedding
// channels-last) and as a llama.cpp mmproj GGUF (ModelLoadOptions::mmproj) encodes bit for bit
// alike; an mmproj that does not fit the model (a tensor missing, another width, another
// projector) is dropped with one warning naming why, and the text model is unchanged.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>

#include "base/error.h"
#include "model/gguf_file.h"
#include "model/model.h"
#include "modelgen/mmproj_writer.h"
#include "modelgen/model_writer.h"
#include "captured_log.h"
#include "tiny_model.h"

namespace qmlx {
namespace {

using modelgen::Arch;
using modelgen::Layout;

modelgen::ModelOptions tower_options(Layout layout) {
  modelgen::ModelOptions o;
  o.arch = Arch::kQwen35;
  o.layout = layout;
  o.shape = modelgen::default_shape(o.arch);
  o.shape.vision = true;
  o.seed = 11;
  return o;
}

// A 2 x 4 patch grid of a 2-frame image: two merge blocks per frame.
std::vector<float> encode(const Model& model) {
  const int patch_dim = model.weights().vision->config.patch_dim();
  std::vector<float> pixels(size_t(16) * patch_dim);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = float(int(i * 7919 % 201) - 100) / 100;
  return model.encode_image(pixels, {2, 2, 4});
}

std::vector<float> logits_of(const Model& model) {
  const std::vector<int32_t> prompt = {5, 80, 13, 200, 7};
  ModelState state = model.new_state(KvType::kF32);
  std::vector<float> logits(model.config().vocab_size);
  model.forward(prompt, state, logits.data());
  return logits;
}

using testing::lines_containing;
using testing::stderr_lines;

class VisionLayoutsTest : public ::testing::Test {
 protected:
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::shared_ptr<const Model> load(const std::string& model, const std::string& mmproj = "") {
    ModelLoadOptions options;
    options.mmproj = mmproj.empty() ? "" : dir_ + "/" + mmproj;
    return Model::load(dir_ + "/" + model, {}, options);
  }
  // Loads `model` with `mmproj`: one warning holding `why`, no tower, the text model's logits.
  void expect_dropped(const std::string& model, const std::string& mmproj, const std::string& why) {
    std::shared_ptr<const Model> loaded;
    const auto warnings =
        lines_containing(stderr_lines([&] { loaded = load(model, mmproj); }), " warn ");
    ASSERT_EQ(warnings.size(), 1u) << ::testing::PrintToString(warnings);
    EXPECT_NE(warnings[0].find("model: vision tower "), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find(why), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find("images are not read"), std::string::npos) << warnings[0];
    EXPECT_FALSE(loaded->has_vision());
    EXPECT_NE(loaded->vision_unavailable_reason().find(why), std::string::npos);
    EXPECT_EQ(logits_of(*loaded), logits_of(*load(model)));
  }

  std::string dir_ = testing::make_temp_dir("vision_layouts");
};

TEST_F(VisionLayoutsTest, EveryLayoutOfOneTowerEncodesAlike) {
  for (const auto dtype : {modelgen::TensorDType::kF32, modelgen::TensorDType::kBF16}) {
    auto hf = tower_options(Layout::kHF), mlx = tower_options(Layout::kMLX);
    hf.dtype = mlx.dtype = dtype;
    modelgen::write_random_model(hf, dir_ + "/hf");
    modelgen::write_random_model(mlx, dir_ + "/mlx");
    modelgen::write_random_mmproj(hf, dir_ + "/mmproj.gguf");
    const std::vector<float> expected = encode(*load("hf"));
    EXPECT_EQ(encode(*load("mlx")), expected);

    std::shared_ptr<const Model> flagged;
    const auto lines = stderr_lines([&] { flagged = load("mlx", "mmproj.gguf"); });
    EXPECT_EQ(lines_containing(lines, " warn ").size(), 0u) << ::testing::PrintToString(lines);
    EXPECT_EQ(lines_containing(lines, "replaces the checkpoint's").size(), 1u)
        << ::testing::PrintToString(lines);
    ASSERT_TRUE(flagged->has_vision());
    EXPECT_EQ(encode(*flagged), expected);
  }
}

// What llama.cpp's converter writes and mtmd needs (tests/oracle/mtmd_vs_qmlx.py runs mtmd on
// such files): the normalization arrays, the position grid in F32 whatever the type, and the
// patch embedding in F16 for an f16 file and F32 otherwise.
TEST_F(VisionLayoutsTest, AnMmprojHasTheConvertersTypesAndNormalization) {
  for (const auto dtype :
       {modelgen::TensorDType::kF32, modelgen::TensorDType::kF16, modelgen::TensorDType::kBF16}) {
    auto options = tower_options(Layout::kHF);
    options.dtype = dtype;
    modelgen::write_random_mmproj(options, dir_ + "/types.gguf");
    const GgufFile file(dir_ + "/types.gguf");
    EXPECT_EQ(file.metadata().at("clip.vision.image_mean"), nlohmann::json({0.5, 0.5, 0.5}));
    EXPECT_EQ(file.metadata().at("clip.vision.image_std"), nlohmann::json({0.5, 0.5, 0.5}));
    EXPECT_EQ(file.find("v.position_embd.weight")->type, GgufType::kF32);
    const GgufType patch = dtype == modelgen::TensorDType::kF16 ? GgufType::kF16 : GgufType::kF32;
    EXPECT_EQ(file.find("v.patch_embd.weight")->type, patch);
    EXPECT_EQ(file.find("v.patch_embd.weight.1")->type, patch);
    const GgufType matrix = dtype == modelgen::TensorDType::kF32   ? GgufType::kF32
                            : dtype == modelgen::TensorDType::kF16 ? GgufType::kF16
                                                                   : GgufType::kBF16;
    EXPECT_EQ(file.find("v.blk.0.attn_qkv.weight")->type, matrix);
  }
  // --mmproj-type q8_0: the matrices only (the converter's --outtype q8_0).
  modelgen::write_random_mmproj(tower_options(Layout::kHF), dir_ + "/q8.gguf",
                                modelgen::GgufQuant::kQ8_0);
  const GgufFile q8(dir_ + "/q8.gguf");
  EXPECT_EQ(q8.find("mm.0.weight")->type, GgufType::kQ8_0);
  EXPECT_EQ(q8.find("mm.0.bias")->type, GgufType::kF32);
  EXPECT_EQ(q8.find("v.patch_embd.weight")->type, GgufType::kF32);
  EXPECT_EQ(q8.find("v.position_embd.weight")->type, GgufType::kF32);
}

TEST_F(VisionLayoutsTest, AnMmprojThatDoesNotFitIsDroppedAndTheTextModelServes) {
  auto text = tower_options(Layout::kHF);
  text.shape.vision = false;
  modelgen::write_random_model(text, dir_ + "/text");

  auto incomplete = tower_options(Layout::kHF);
  incomplete.omit_tensors = {"v.post_ln.bias", "v.patch_embd.weight.1"};
  modelgen::write_random_mmproj(incomplete, dir_ + "/incomplete.gguf");
  expect_dropped("text", "incomplete.gguf",
                 "incomplete (missing v.patch_embd.weight.1, v.post_ln.bias)");

  auto narrow = tower_options(Layout::kHF);
  narrow.shape.hidden = 32;
  narrow.shape.head_dim = 16;
  modelgen::write_random_mmproj(narrow, dir_ + "/narrow.gguf");
  expect_dropped("text", "narrow.gguf",
                 "projection_dim 32 is not the language model's "
                 "hidden_size 64");

  // Qwen2-VL's merger: same byte length, so only the key's value changes.
  modelgen::write_random_mmproj(tower_options(Layout::kHF), dir_ + "/qwen2.gguf");
  std::string bytes;
  {
    std::ifstream in(dir_ + "/qwen2.gguf", std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t at = bytes.find("qwen3vl_merger");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 14, "qwen2vl_merger");
  std::ofstream(dir_ + "/qwen2.gguf", std::ios::binary) << bytes;
  expect_dropped("text", "qwen2.gguf", "projector type 'qwen2vl_merger' is not qwen3vl_merger");

  // A file that is no mmproj at all is the caller's mistake: the load fails naming it.
  EXPECT_THROW(load("text", "absent.gguf"), Error);
}

}  // namespace
}  // namespace qmlx
