// Images in the language model's forward pass (model/sequence_image.h, model/image_rows.h): the
// rows of an image take its embedding rows and M-RoPE positions; the state's rope_delta carries
// the shift to the text after it. A prompt with an image is split-invariant and batch-invariant
// bit for bit like a text one, a restored state (rows copied, rope_delta from rope_delta_at)
// continues exactly, and wrong embeddings are refused before the state changes. The numbers
// against the numpy reference are checked by tests/oracle/image_forward_vs_reference.py.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "base/error.h"
#include "image_prompt.h"
#include "model/model.h"
#include "modelgen/gguf_model_writer.h"
#include "modelgen/model_writer.h"
#include "modelgen/tokenizer_files.h"
#include "tiny_model.h"

namespace qmlx {
namespace {

using modelgen::Arch;

void expect_same_bits(const std::vector<float>& a, const std::vector<float>& b,
                      const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << what;
}

class ImageForwardTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = testing::make_temp_dir("image_forward");
    modelgen::ModelOptions o;
    o.arch = Arch::kQwen35;
    o.shape = modelgen::default_shape(o.arch);
    o.shape.vision = true;
    o.shape.mtp = true;
    o.seed = 11;
    modelgen::write_random_model(o, dir_);
    model_ = Model::load(dir_);
  }
  static void TearDownTestSuite() {
    model_.reset();
    std::filesystem::remove_all(dir_);
  }

  void SetUp() override {
    H_ = model_->config().hidden_size;
    V_ = model_->config().vocab_size;
    pad_ = model_->image_pad_id();
    // [5 text | a 2 x 3 image | 4 text]: the text after it resumes at 5 + 3 = 8, row 11.
    testing::ImagePrompt prompt = testing::two_by_three_image_prompt(pad_, H_);
    tokens_ = std::move(prompt.tokens);
    images_ = std::move(prompt.images);
  }

  // Feeds tokens_[begin, end) as prompt rows; returns the logits after the last.
  std::vector<float> feed(ModelState& state, size_t begin, size_t end,
                          std::span<const SequenceImage> images) const {
    std::vector<float> logits(V_);
    ForwardOptions o;
    o.images = images;
    model_->forward(std::span(tokens_).subspan(begin, end - begin), state, logits.data(), o);
    return logits;
  }

  static std::string dir_;
  static std::shared_ptr<const Model> model_;
  int H_ = 0, V_ = 0;
  int32_t pad_ = -1;
  std::vector<int32_t> tokens_;
  std::vector<SequenceImage> images_;
};

std::string ImageForwardTest::dir_;
std::shared_ptr<const Model> ImageForwardTest::model_;

TEST_F(ImageForwardTest, ConfigCarriesTheImageTokenAndSections) {
  const modelgen::Vocabulary vocabulary = modelgen::Vocabulary::demo();
  EXPECT_EQ(pad_, vocabulary.special_id("<|image_pad|>"));
  EXPECT_EQ(model_->config().mrope_section, (std::vector<int>{2, 1, 1}));  // rotary_dim 8
  EXPECT_TRUE(model_->config().mrope_interleaved);
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/preprocessor_config.json"));
}

TEST_F(ImageForwardTest, TheImageIsFedAndMovesTheTextAfterIt) {
  ModelState with = model_->new_state(KvType::kF32), without = model_->new_state(KvType::kF32);
  const std::vector<float> a = feed(with, 0, tokens_.size(), images_);
  const std::vector<float> b = feed(without, 0, tokens_.size(), {});
  EXPECT_NE(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
  EXPECT_EQ(with.rope_delta, 8 - 11);
  EXPECT_EQ(without.rope_delta, 0);
  // Text before the image is text: the same rows either way.
  ModelState before_a = model_->new_state(KvType::kF32), before_b = model_->new_state(KvType::kF32);
  expect_same_bits(feed(before_a, 0, 5, images_), feed(before_b, 0, 5, {}), "text before");
}

TEST_F(ImageForwardTest, SplitsThroughTheImageAndBatchesAreBitIdentical) {
  ModelState whole = model_->new_state(KvType::kF32);
  const std::vector<float> expected = feed(whole, 0, tokens_.size(), images_);
  // Cuts inside the image (rows 7 and 9) and at its last row (10); only some calls are given
  // the image, as a server that passes the images overlapping each chunk would.
  ModelState pieces = model_->new_state(KvType::kF32);
  feed(pieces, 0, 3, {});
  feed(pieces, 3, 7, images_);
  feed(pieces, 7, 9, images_);
  EXPECT_EQ(pieces.rope_delta, 0);  // the image is not over yet
  feed(pieces, 9, 10, images_);
  EXPECT_EQ(pieces.rope_delta, 0);
  feed(pieces, 10, 11, images_);
  EXPECT_EQ(pieces.rope_delta, -3);
  expect_same_bits(feed(pieces, 11, tokens_.size(), {}), expected, "pieces");
  EXPECT_EQ(pieces.rope_delta, whole.rope_delta);

  // Beside another sequence (text, prompt rows) in one forward_batch, cut inside the image.
  ModelState batched = model_->new_state(KvType::kF32), other = model_->new_state(KvType::kF32);
  feed(batched, 0, 8, images_);
  const std::vector<int32_t> text = {1, 2, 3, 4, 5, 6, 7};
  std::vector<float> logits(V_), other_logits(V_);
  BatchSegment segments[2];
  segments[0].tokens = text;
  segments[0].state = &other;
  segments[0].logits = other_logits.data();
  segments[1].tokens = std::span(tokens_).subspan(8);
  segments[1].state = &batched;
  segments[1].logits = logits.data();
  segments[1].images = images_;
  model_->forward_batch(segments);
  expect_same_bits(logits, expected, "batched");
  ModelState alone = model_->new_state(KvType::kF32);
  std::vector<float> alone_logits(V_);
  model_->forward(text, alone, alone_logits.data());
  expect_same_bits(other_logits, alone_logits, "the text sequence beside it");
}

// A llama.cpp-style GGUF file keeps the sections as rope.dimension_sections (interleaved).
TEST(ImageForwardGgufTest, SectionsComeFromTheGgufMetadata) {
  const std::string dir = testing::make_temp_dir("image_gguf");
  modelgen::ModelOptions o;
  o.arch = Arch::kQwen35;
  o.shape = modelgen::default_shape(o.arch);
  modelgen::write_random_gguf_model(o, modelgen::parse_gguf_recipe("f32"), dir + "/m.gguf");
  auto model = Model::load(dir + "/m.gguf");
  EXPECT_EQ(model->config().mrope_section, (std::vector<int>{2, 1, 1}));
  EXPECT_TRUE(model->config().mrope_interleaved);
  std::filesystem::remove_all(dir);
}

// Decoding after [text, image, text], against a state restored at a cut point the way the cache
// does it: its rows copied into a fresh state, position and rope_delta (rope_delta_at) set.
TEST_F(ImageForwardTest, RestoredStateContinuesWithItsRopeDelta) {
  const std::vector<int32_t> decoded = {100, 101, 102};
  auto decode = [&](ModelState& state, const std::vector<float>& prompt_logits) {
    std::vector<float> all = prompt_logits, logits(V_);
    ForwardOptions o;
    o.rows = RowKind::kGenerated;
    for (int32_t token : decoded) {
      model_->forward(std::span(&token, 1), state, logits.data(), o);
      all.insert(all.end(), logits.begin(), logits.end());
    }
    return all;
  };
  ModelState straight = model_->new_state(KvType::kF32);
  const std::vector<float> expected = decode(straight, feed(straight, 0, tokens_.size(), images_));
  EXPECT_EQ(straight.rope_delta, -3);

  for (size_t cut : {size_t(7), size_t(11), size_t(13)}) {
    ModelState first = model_->new_state(KvType::kF32);
    feed(first, 0, cut, images_);
    ModelState restored = model_->new_state(KvType::kF32);
    const size_t row = first.kv_row_bytes;
    std::vector<uint8_t> k(cut * row), v(cut * row);
    for (size_t a = 0; a < first.kv.size(); ++a) {
      model_->read_kv_rows(first, int(a), 0, int64_t(cut), k.data(), v.data());
      model_->write_kv_rows(restored, int(a), 0, int64_t(cut), k.data(), v.data());
    }
    for (size_t r = 0; r < first.recurrent.size(); ++r)
      model_->write_recurrent(restored, int(r), first.recurrent[r].conv.data(),
                              first.recurrent[r].ssm.data());
    restored.position = int64_t(cut);
    restored.rope_delta = rope_delta_at(images_, int64_t(cut));
    EXPECT_EQ(restored.rope_delta, first.rope_delta) << "cut " << cut;
    // After the image the rest is text and needs no images; inside it, it does.
    std::span<const SequenceImage> rest_images;
    if (cut < size_t(images_[0].end_row())) rest_images = images_;
    expect_same_bits(decode(restored, feed(restored, cut, tokens_.size(), rest_images)), expected,
                     "restored at " + std::to_string(cut));
  }
}

TEST_F(ImageForwardTest, WrongEmbeddingsAreRefusedBeforeTheStateChanges) {
  std::vector<SequenceImage> bad = images_;
  bad[0].embeddings = std::make_shared<std::vector<float>>(size_t(bad[0].rows() - 1) * H_);
  ModelState state = model_->new_state(KvType::kF32);
  EXPECT_THROW(feed(state, 0, tokens_.size(), bad), Error);
  bad[0].embeddings = nullptr;
  EXPECT_THROW(feed(state, 0, tokens_.size(), bad), Error);
  EXPECT_EQ(state.position, 0);
  EXPECT_EQ(state.rope_delta, 0);
  // An image outside the call's rows is not read: the text before it needs no embeddings.
  feed(state, 0, 5, bad);
  EXPECT_EQ(state.position, 5);
}

TEST_F(ImageForwardTest, CloneKeepsTheRopeDelta) {
  ModelState state = model_->new_state(KvType::kF32);
  feed(state, 0, 12, images_);
  ModelState copy = model_->clone_state(state);
  EXPECT_EQ(copy.rope_delta, -3);
  expect_same_bits(feed(copy, 12, tokens_.size(), {}), feed(state, 12, tokens_.size(), {}),
                   "clone");
}

// The MTP head: row p at the main model's position of row p, the next token's embedding an
// image row where it is a pad. Rows at once or in pieces agree bit for bit, and its state's
// rope_delta follows the main state's.
TEST_F(ImageForwardTest, MtpHeadTakesImageRowsAndPositions) {
  ASSERT_TRUE(model_->has_mtp());
  const size_t T = tokens_.size() - 1;  // MTP rows pair hidden p with token p + 1
  std::vector<float> hidden(tokens_.size() * H_), logits(V_);
  ModelState main = model_->new_state(KvType::kF32);
  ForwardOptions o;
  o.images = images_;
  o.final_hidden = hidden.data();
  model_->forward(tokens_, main, logits.data(), o);
  const std::span<const int32_t> next = std::span(tokens_).subspan(1);

  ModelState once = model_->new_mtp_state(KvType::kF32);
  std::vector<float> expected(V_);
  model_->mtp_forward(std::span(hidden).first(T * H_), next, once, expected.data(),
                      RowKind::kPrompt, nullptr, images_);
  EXPECT_EQ(once.rope_delta, main.rope_delta);

  ModelState pieces = model_->new_mtp_state(KvType::kF32);
  std::vector<float> got(V_);
  for (auto [begin, end] : {std::pair<size_t, size_t>{0, 4}, {4, 8}, {8, 10}, {10, T}})
    model_->mtp_forward(std::span(hidden).subspan(begin * H_, (end - begin) * H_),
                        next.subspan(begin, end - begin), pieces, got.data(), RowKind::kPrompt,
                        nullptr, images_);
  expect_same_bits(got, expected, "MTP in pieces");

  ModelState text_only = model_->new_mtp_state(KvType::kF32);
  model_->mtp_forward(std::span(hidden).first(T * H_), next, text_only, got.data(),
                      RowKind::kPrompt);
  EXPECT_NE(std::memcmp(got.data(), expected.data(), got.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace qmlx
