// Loading checkpoints: every layout of the same weights gives the same logits, and every kind
// of broken model directory gives an Error naming the file and the tensor.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "model/model.h"
#include "tiny_model.h"

namespace qmlx {
namespace {

using testing::relative_error;
using testing::TinyModelSpec;

std::vector<float> logits_for(const std::string& dir, const std::vector<int32_t>& tokens) {
  auto model = Model::load(dir);
  ModelState state = model->new_state(KvType::kF32);
  std::vector<float> logits(model->config().vocab_size);
  model->forward(tokens, state, logits.data());
  return logits;
}

const std::vector<int32_t> kPrompt = {3, 17, 99, 4, 4, 120, 65, 1, 0, 127, 42};

class LayoutTest : public ::testing::TestWithParam<std::string> {
 protected:
  std::string dir_ = testing::make_temp_dir("layout");
  void TearDown() override { std::filesystem::remove_all(dir_); }
};

TEST_P(LayoutTest, HfAndMlxFloatLayoutsAgree) {
  TinyModelSpec hf{GetParam(), "hf"}, mlx{GetParam(), "mlx"};
  testing::write_tiny_model(dir_ + "/hf", hf);
  testing::write_tiny_model(dir_ + "/mlx", mlx);
  auto a = logits_for(dir_ + "/hf", kPrompt), b = logits_for(dir_ + "/mlx", kPrompt);
  EXPECT_LT(relative_error(a, b), 1e-5);
  // Logits are not degenerate.
  EXPECT_GT(*std::max_element(a.begin(), a.end()) - *std::min_element(a.begin(), a.end()), 0.1);
}

TEST_P(LayoutTest, Mlx4BitEqualsItsDequantizedWeights) {
  TinyModelSpec hf{GetParam(), "hf"}, mlx{GetParam(), "mlx"};
  hf.bits = mlx.bits = 4;
  hf.snap_bits = true;
  hf.tie = mlx.tie = true;  // quantized embedding doubles as the head
  testing::write_tiny_model(dir_ + "/hf", hf);
  testing::write_tiny_model(dir_ + "/mlx", mlx);
  // The quantized head runs the int16-activation decode kernel (kernels/int16_activations.h,
  // ~2^-16 relative); the f32 one multiplies in fp32.
  EXPECT_LT(relative_error(logits_for(dir_ + "/mlx", kPrompt), logits_for(dir_ + "/hf", kPrompt)),
            1e-4);
  // The quantized model keeps about 4 bits per weight.
  auto q = Model::load(dir_ + "/mlx"), f = Model::load(dir_ + "/hf");
  EXPECT_LT(double(q->weights().matrix_bytes()), 0.25 * double(f->weights().matrix_bytes()));
}

INSTANTIATE_TEST_SUITE_P(Architectures, LayoutTest,
                         ::testing::Values("qwen3_5", "qwen3_5_moe", "qwen3_next", "qwen3"));

TEST(LoaderTest, Bf16AndMixedBitsLoadAndMatchTheirF32Copies) {
  std::string dir = testing::make_temp_dir("bf16");
  TinyModelSpec bf{"qwen3_5_moe", "hf", "BF16"};
  TinyModelSpec f32 = bf;
  f32.float_dtype = "F32";
  // Same random draws; snap the f32 copy to bf16 by building it from the bf16 values.
  auto bf_model = testing::build_tiny_model(bf);
  testing::write_model(dir + "/bf16", bf_model);
  for (auto& [name, t] : bf_model.tensors) {
    if (t.dtype != "BF16") continue;
    std::vector<float> v(t.bytes.size() / 2);
    for (size_t i = 0; i < v.size(); ++i) {
      uint32_t bits = uint32_t(t.bytes[2 * i] | (t.bytes[2 * i + 1] << 8)) << 16;
      std::memcpy(&v[i], &bits, 4);
    }
    t = testing::f32_blob(t.shape, v);
  }
  testing::write_model(dir + "/f32", bf_model);
  EXPECT_LT(relative_error(logits_for(dir + "/bf16", kPrompt), logits_for(dir + "/f32", kPrompt)),
            1e-5);

  for (int bits : {2, 3, 5, 6, 8}) {
    TinyModelSpec q{"qwen3_next", "mlx"}, h{"qwen3_next", "hf"};
    q.bits = h.bits = bits;
    h.snap_bits = true;
    testing::write_tiny_model(dir + "/q", q);
    testing::write_tiny_model(dir + "/h", h);
    // As in Mlx4BitEqualsItsDequantizedWeights: int16 activations in the quantized decode.
    EXPECT_LT(relative_error(logits_for(dir + "/q", kPrompt), logits_for(dir + "/h", kPrompt)),
              1e-4)
        << bits << " bits";
  }
  std::filesystem::remove_all(dir);
}

TEST(LoaderTest, ShardedIndexLoadsLikeOneFile) {
  std::string dir = testing::make_temp_dir("shards");
  auto m = testing::build_tiny_model({"qwen3_5", "mlx"});
  testing::write_model(dir + "/one", m);
  std::filesystem::create_directories(dir + "/two");
  std::ofstream(dir + "/two/config.json") << m.config.dump();
  testing::TensorMap a, b;
  nlohmann::json map = nlohmann::json::object();
  int i = 0;
  for (auto& [name, t] : m.tensors) {
    bool first = i++ % 2 == 0;
    (first ? a : b)[name] = t;
    map[name] = first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
  }
  testing::write_safetensors(dir + "/two/model-00001-of-00002.safetensors", a);
  testing::write_safetensors(dir + "/two/model-00002-of-00002.safetensors", b);
  std::ofstream(dir + "/two/model.safetensors.index.json") << nlohmann::json{{"weight_map", map}};
  EXPECT_EQ(logits_for(dir + "/one", kPrompt), logits_for(dir + "/two", kPrompt));
  std::filesystem::remove(dir + "/two/model-00002-of-00002.safetensors");
  try {
    Model::load(dir + "/two");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model-00002-of-00002.safetensors"), std::string::npos);
  }
  std::filesystem::remove_all(dir);
}

// Broken model directories.
class BadModelTest : public ::testing::Test {
 protected:
  void SetUp() override { model_ = testing::build_tiny_model({"qwen3_5_moe", "mlx", "F32", 4}); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Writes the model and expects loading to fail with a message containing every `needle`.
  void expect_error(const std::vector<std::string>& needles) {
    testing::write_model(dir_, model_);
    expect_load_error(needles);
  }
  void expect_load_error(const std::vector<std::string>& needles) {
    try {
      Model::load(dir_);
      FAIL() << "loaded a broken model";
    } catch (const Error& e) {
      for (const auto& n : needles)
        EXPECT_NE(std::string(e.what()).find(n), std::string::npos)
            << "'" << e.what() << "' lacks '" << n << "'";
    }
  }

  std::string dir_ = testing::make_temp_dir("bad");
  testing::TinyModel model_;
  const std::string q_proj_ = "language_model.model.layers.3.self_attn.q_proj";
};

TEST_F(BadModelTest, MissingConfig) {
  testing::write_model(dir_, model_);
  std::filesystem::remove(dir_ + "/config.json");
  expect_load_error({"config.json"});
}

TEST_F(BadModelTest, MissingWeightsFile) {
  testing::write_model(dir_, model_);
  std::filesystem::remove(dir_ + "/model.safetensors");
  expect_load_error({"model.safetensors", "missing file"});
}

TEST_F(BadModelTest, UnknownArchitecture) {
  model_.config["model_type"] = "mamba";
  expect_error({"config.json", "mamba"});
}

TEST_F(BadModelTest, MissingTensor) {
  model_.tensors.erase(q_proj_ + ".scales");
  model_.tensors.erase(q_proj_ + ".biases");
  model_.tensors.erase(q_proj_ + ".weight");
  expect_error({"missing tensor", q_proj_});
}

TEST_F(BadModelTest, ExtraTensor) {
  model_.tensors["language_model.model.layers.0.mystery.weight"] =
      testing::f32_blob({2}, {1.f, 2.f});
  expect_error({"model.safetensors", "unexpected tensor", "layers.0.mystery.weight"});
}

TEST_F(BadModelTest, WrongShape) {
  const std::string norm = "language_model.model.layers.0.input_layernorm.weight";
  model_.tensors[norm] = testing::f32_blob({63}, std::vector<float>(63, 1.f));
  expect_error({"model.safetensors", norm, "wrong shape"});
}

TEST_F(BadModelTest, UnsupportedDtype) {
  const std::string norm = "language_model.model.norm.weight";
  model_.tensors[norm].dtype = "I32";
  expect_error({"model.safetensors", norm, "unsupported dtype I32"});
}

TEST_F(BadModelTest, UnsupportedQuantizationMode) {
  model_.config["quantization"]["mode"] = "mxfp4";
  expect_error({"unsupported quantization mode", "mxfp4"});
}

TEST_F(BadModelTest, UnsupportedQuantizationBits) {
  model_.config["quantization"]["bits"] = 7;
  expect_error({"unsupported quantization bits=7"});
}

TEST_F(BadModelTest, TruncatedFile) {
  testing::write_model(dir_, model_);
  auto path = dir_ + "/model.safetensors";
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 100);
  expect_load_error({"model.safetensors", "truncated"});
}

TEST_F(BadModelTest, HeaderLargerThanFile) {
  testing::write_model(dir_, model_);
  std::fstream f(dir_ + "/model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
  uint64_t huge = 1ull << 40;
  f.write(reinterpret_cast<const char*>(&huge), 8);
  f.close();
  expect_load_error({"model.safetensors", "header length", "larger than the file"});
}

TEST_F(BadModelTest, TinyFile) {
  testing::write_model(dir_, model_);
  std::ofstream(dir_ + "/model.safetensors", std::ios::trunc) << "abc";
  expect_load_error({"model.safetensors", "truncated"});
}

}  // namespace
}  // namespace qmlx
