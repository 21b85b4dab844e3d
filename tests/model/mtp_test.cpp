// The MTP head at the model level: which checkpoints have one, that feeding its rows at once or
// one by one gives the same logits (its K/V cache holds every earlier row), and that lowering
// its position rolls rows back. A broken head is dropped at load (optional_parts_test.cpp). Its
// numbers against the numpy reference are checked by tests/oracle/mtp_vs_reference.py.
#include <gtest/gtest.h>

#include <filesystem>

#include "base/error.h"
#include "model/model.h"
#include "modelgen/gguf_model_writer.h"
#include "modelgen/model_writer.h"
#include "tiny_model.h"

namespace qmlx {
namespace {

using modelgen::Arch;
using modelgen::Layout;
using testing::relative_error;

modelgen::ModelOptions options(Arch arch, Layout layout, bool mtp) {
  modelgen::ModelOptions o;
  o.arch = arch;
  o.layout = layout;
  o.shape = modelgen::default_shape(arch);
  o.shape.mtp = mtp;
  o.seed = 3;
  return o;
}

class MtpTest : public ::testing::Test {
 protected:
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_ = testing::make_temp_dir("mtp");
};

TEST_F(MtpTest, OnlyCheckpointsWithTheHeadHaveIt) {
  modelgen::write_random_model(options(Arch::kQwen35, Layout::kHF, false), dir_ + "/plain");
  auto plain = Model::load(dir_ + "/plain");
  EXPECT_FALSE(plain->has_mtp());
  EXPECT_THROW(plain->new_mtp_state(KvType::kF32), Error);

  modelgen::write_random_model(options(Arch::kQwen35Moe, Layout::kHF, true), dir_ + "/hf");
  auto mlx_options = options(Arch::kQwen3Next, Layout::kMLX, true);
  mlx_options.quantization = modelgen::QuantParams{4, 32};
  modelgen::write_random_model(mlx_options, dir_ + "/mlx");
  modelgen::write_random_gguf_model(options(Arch::kQwen35, Layout::kHF, true),
                                    modelgen::parse_gguf_recipe("q8_0"), dir_ + "/m.gguf");
  for (const char* name : {"/hf", "/mlx", "/m.gguf"}) {
    auto model = Model::load(dir_ + name);
    EXPECT_TRUE(model->has_mtp()) << name;
    EXPECT_EQ(model->weights().layers.size(), 4u) << name;  // the head is not a main layer
  }
}

// Runs the main model over `tokens` and returns its final hidden rows.
std::vector<float> final_hidden(const Model& model, const std::vector<int32_t>& tokens) {
  ModelState state = model.new_state(KvType::kF32);
  std::vector<float> hidden(tokens.size() * model.config().hidden_size);
  std::vector<float> logits(model.config().vocab_size);
  ForwardOptions o;
  o.final_hidden = hidden.data();
  model.forward(tokens, state, logits.data(), o);
  return hidden;
}

TEST_F(MtpTest, RowsAtOnceOrOneByOneAgreeAndRollBack) {
  modelgen::write_random_model(options(Arch::kQwen35Moe, Layout::kHF, true), dir_);
  auto model = Model::load(dir_);
  const size_t H = model->config().hidden_size, V = model->config().vocab_size;
  const std::vector<int32_t> tokens = {5, 80, 13, 200, 7, 7, 150, 31, 64, 99};
  const std::vector<float> hidden = final_hidden(*model, tokens);
  const size_t rows = tokens.size() - 1;  // row p: hidden p with token p + 1
  const std::vector<int32_t> next(tokens.begin() + 1, tokens.end());

  ModelState at_once = model->new_mtp_state(KvType::kF32);
  std::vector<float> a(V), b(V), c(V);
  model->mtp_forward(std::span(hidden).first(rows * H), next, at_once, a.data());
  EXPECT_EQ(at_once.position, int64_t(rows));

  ModelState one_by_one = model->new_mtp_state(KvType::kF32);
  for (size_t p = 0; p < rows; ++p)
    model->mtp_forward(std::span(hidden).subspan(p * H, H), std::span(next).subspan(p, 1),
                       one_by_one, b.data());
  EXPECT_EQ(b, a);  // generated rows: one arithmetic however many share the call
  EXPECT_GT(*std::max_element(a.begin(), a.end()) - *std::min_element(a.begin(), a.end()), 0.1);

  // A rejected draft: the last row fed with another token, then rolled back and refed.
  const std::span last_hidden = std::span(hidden).subspan((rows - 1) * H, H);
  one_by_one.position -= 1;
  const int32_t other = 42;
  model->mtp_forward(last_hidden, std::span(&other, 1), one_by_one, c.data());
  EXPECT_GT(relative_error(c, a), 1e-3);
  one_by_one.position -= 1;
  model->mtp_forward(last_hidden, std::span(next).last(1), one_by_one, c.data());
  EXPECT_EQ(c, a);

  std::vector<float> short_hidden(H - 1);
  EXPECT_THROW(model->mtp_forward(short_hidden, std::span(next).first(1), one_by_one, c.data()),
               Error);
  ModelState main_state = model->new_state(KvType::kF32);
  EXPECT_THROW(model->mtp_forward(last_hidden, std::span(next).first(1), main_state, c.data()),
               Error);
}

}  // namespace
}  // namespace qmlx
