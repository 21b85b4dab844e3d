// Optional parts of a checkpoint (model/optional_parts.h): an MTP head that is incomplete (some
// mtp.* tensors, as converters and fine-tunes leave) or malformed is dropped with one warning
// naming what is wrong, and the model runs exactly as the same checkpoint without the head; a
// missing or malformed core tensor still fails the load. The vision tower follows the same rule.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>

#include "base/error.h"
#include "model/model.h"
#include "model/optional_parts.h"
#include "modelgen/gguf_model_writer.h"
#include "modelgen/model_writer.h"
#include "captured_log.h"
#include "tiny_model.h"

namespace qmlx {
namespace {

using modelgen::Arch;
using modelgen::Layout;

const std::vector<int32_t> kPrompt = {5, 80, 13, 200, 7, 7, 150, 31};

modelgen::ModelOptions options(Arch arch, Layout layout, bool mtp) {
  modelgen::ModelOptions o;
  o.arch = arch;
  o.layout = layout;
  o.shape = modelgen::default_shape(arch);
  o.shape.mtp = mtp;
  o.seed = 3;
  if (layout == Layout::kMLX) o.quantization = modelgen::QuantParams{4, 32};
  return o;
}

std::vector<float> logits_of(const Model& model) {
  ModelState state = model.new_state(KvType::kF32);
  std::vector<float> logits(model.config().vocab_size);
  model.forward(kPrompt, state, logits.data());
  return logits;
}

// The warning lines (log level warn) of what `f` wrote to stderr.
std::vector<std::string> warnings_of(const std::function<void()>& f) {
  return testing::lines_containing(testing::stderr_lines(f), " warn ");
}

// A copy of the checkpoint in `from` with `edit` applied to each tensor (false drops it), plus
// the tensors of `extra`.
using Edit = std::function<bool(const std::string& name, testing::TensorBlob& tensor)>;
void copy_checkpoint(const std::string& from, const std::string& to, const Edit& edit,
                     testing::TensorMap extra = {}) {
  auto store = TensorStore::open_directory(from);
  testing::TensorMap tensors = std::move(extra);
  for (const auto& [name, t] : store->tensors()) {
    testing::TensorBlob blob{t.dtype_name, t.shape,
                             std::vector<uint8_t>(t.data, t.data + t.nbytes)};
    if (edit(name, blob)) tensors[name] = std::move(blob);
  }
  std::filesystem::create_directories(to);
  std::filesystem::copy_file(from + "/config.json", to + "/config.json");
  testing::write_safetensors(to + "/model.safetensors", tensors);
}

bool is_mtp(const std::string& name) { return optional_part_of(name) == &mtp_head_part(); }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

class OptionalPartsTest : public ::testing::Test {
 protected:
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Writes the checkpoint with a head to <dir>/full and the same one without any mtp.* tensor to
  // <dir>/plain.
  void write_full(Arch arch, Layout layout) {
    modelgen::write_random_model(options(arch, layout, true), dir_ + "/full");
    copy_checkpoint(dir_ + "/full", dir_ + "/plain",
                    [](const std::string& name, testing::TensorBlob&) { return !is_mtp(name); });
  }

  // Loads <dir>/<name>: its head must have been dropped with one warning holding `warning`,
  // and its logits must be those of <dir>/<plain>.
  void expect_dropped(const std::string& name, const std::string& warning,
                      const std::string& plain = "plain") {
    std::shared_ptr<const Model> model;
    const auto warnings = warnings_of([&] { model = Model::load(dir_ + "/" + name); });
    ASSERT_EQ(warnings.size(), 1u) << ::testing::PrintToString(warnings);
    EXPECT_NE(warnings[0].find("model: MTP head " + warning), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find("multi-token prediction is off"), std::string::npos);
    EXPECT_FALSE(model->has_mtp());
    EXPECT_TRUE(model->mtp_dropped());
    EXPECT_NE(model->mtp_unavailable_reason().find("the model's MTP head is " + warning),
              std::string::npos)
        << model->mtp_unavailable_reason();
    // Asking for the head anyway says why it is not there.
    EXPECT_NE(error_of([&] { model->new_mtp_state(KvType::kF32); }).find(warning),
              std::string::npos);
    EXPECT_EQ(logits_of(*model), logits_of(*Model::load(dir_ + "/" + plain)));
  }

  std::string dir_ = testing::make_temp_dir("optional_parts");
};

TEST_F(OptionalPartsTest, WholeHeadLoadsWithoutWarning) {
  write_full(Arch::kQwen35, Layout::kHF);
  std::shared_ptr<const Model> model;
  EXPECT_TRUE(warnings_of([&] { model = Model::load(dir_ + "/full"); }).empty());
  EXPECT_TRUE(model->has_mtp());
  EXPECT_FALSE(model->mtp_dropped());
  EXPECT_EQ(model->mtp_unavailable_reason(), "");
  // No head at all is not a problem either: nothing to warn about, nothing dropped.
  std::shared_ptr<const Model> plain;
  EXPECT_TRUE(warnings_of([&] { plain = Model::load(dir_ + "/plain"); }).empty());
  EXPECT_FALSE(plain->has_mtp());
  EXPECT_FALSE(plain->mtp_dropped());
  EXPECT_EQ(plain->mtp_unavailable_reason(), "the model has no MTP head");
}

TEST_F(OptionalPartsTest, HeadMissingTensorsIsDroppedNamingThem) {
  write_full(Arch::kQwen35, Layout::kHF);
  copy_checkpoint(dir_ + "/full", dir_ + "/broken", [](const std::string& name, auto&) {
    return name != "mtp.pre_fc_norm_embedding.weight" && name != "mtp.norm.weight";
  });
  expect_dropped("broken",
                 "incomplete (missing mtp.pre_fc_norm_embedding.weight, mtp.norm.weight)");
}

TEST_F(OptionalPartsTest, OnlyFcIsDroppedNamingTheFirstFewMissing) {
  write_full(Arch::kQwen35Moe, Layout::kHF);
  copy_checkpoint(dir_ + "/full", dir_ + "/broken", [](const std::string& name, auto&) {
    return !is_mtp(name) || name == "mtp.fc.weight";
  });
  // The first 8 missing are named, then a count (of every expert tensor of the layout the
  // loader falls back to when the head holds none).
  expect_dropped(
      "broken",
      "incomplete (missing mtp.pre_fc_norm_embedding.weight, "
      "mtp.pre_fc_norm_hidden.weight, mtp.norm.weight, "
      "mtp.layers.0.input_layernorm.weight, mtp.layers.0.post_attention_layernorm.weight, "
      "mtp.layers.0.self_attn.q_proj.weight, mtp.layers.0.self_attn.k_proj.weight, "
      "mtp.layers.0.self_attn.v_proj.weight and ");
}

TEST_F(OptionalPartsTest, HeadWithoutFcIsDropped) {
  // Before, a head without fc was silently ignored whatever else it held.
  write_full(Arch::kQwen35, Layout::kHF);
  copy_checkpoint(dir_ + "/full", dir_ + "/broken", [](const std::string& name, auto&) {
    return name != "mtp.fc.weight" && name.find("mtp.layers.") == std::string::npos;
  });
  expect_dropped("broken", "incomplete (missing mtp.fc.weight, mtp.layers.0.");
}

TEST_F(OptionalPartsTest, MalformedHeadTensorIsDroppedNamingIt) {
  write_full(Arch::kQwen35, Layout::kHF);
  copy_checkpoint(dir_ + "/full", dir_ + "/broken", [](const std::string& name, auto& t) {
    if (name == "mtp.fc.weight") {  // [H, 2H] cut to [H, H]
      t.shape[1] /= 2;
      t.bytes.resize(t.bytes.size() / 2);
    }
    return true;
  });
  expect_dropped("broken", "malformed (");
  std::shared_ptr<const Model> model;
  warnings_of([&] { model = Model::load(dir_ + "/broken"); });
  EXPECT_NE(model->mtp_unavailable_reason().find(
                "tensor 'mtp.fc.weight': wrong shape [64, 64], expected [64, 128]"),
            std::string::npos)
      << model->mtp_unavailable_reason();
}

TEST_F(OptionalPartsTest, MlxQuantizedHeadMissingTensorsIsDropped) {
  write_full(Arch::kQwen35, Layout::kMLX);
  copy_checkpoint(dir_ + "/full", dir_ + "/broken", [](const std::string& name, auto&) {
    return name != "language_model.mtp.norm.weight" &&
           name != "language_model.mtp.layers.0.self_attn.o_proj.biases";
  });
  expect_dropped("broken",
                 "incomplete (missing language_model.mtp.norm.weight, "
                 "language_model.mtp.layers.0.self_attn.o_proj.biases)");
}

TEST_F(OptionalPartsTest, GgufNextnBlockMissingTensorsIsDropped) {
  auto with_head = options(Arch::kQwen35, Layout::kHF, true);
  with_head.omit_tensors = {"blk.4.nextn.enorm.weight", "blk.4.attn_k.weight"};
  modelgen::write_random_gguf_model(with_head, modelgen::parse_gguf_recipe("q8_0"),
                                    dir_ + "/broken.gguf");
  modelgen::write_random_gguf_model(options(Arch::kQwen35, Layout::kHF, false),
                                    modelgen::parse_gguf_recipe("q8_0"), dir_ + "/plain.gguf");
  // block_count still counts the head's block: the main stack keeps its 4 layers and the
  // block's other tensors are not "unexpected".
  expect_dropped("broken.gguf",
                 "incomplete (missing blk.4.nextn.enorm.weight, blk.4.attn_k.weight)",
                 "plain.gguf");
  std::shared_ptr<const Model> model;
  warnings_of([&] { model = Model::load(dir_ + "/broken.gguf"); });
  EXPECT_EQ(model->weights().layers.size(), 4u);
}

// Renames the GGUF metadata key `key` in place (same length), as a file that never had it.
void hide_gguf_key(const std::string& path, const std::string& key) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  const size_t at = bytes.find(key);
  ASSERT_NE(at, std::string::npos) << key;
  bytes[at + key.size() - 1] = '_';
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

TEST_F(OptionalPartsTest, GgufNextnBlockWithoutItsMetadataKeyIsStillTheHead) {
  auto with_head = options(Arch::kQwen35, Layout::kHF, true);
  modelgen::write_random_gguf_model(with_head, modelgen::parse_gguf_recipe("q8_0"),
                                    dir_ + "/whole.gguf");
  hide_gguf_key(dir_ + "/whole.gguf", "qwen35.nextn_predict_layers");
  auto whole = Model::load(dir_ + "/whole.gguf");
  EXPECT_TRUE(whole->has_mtp());
  EXPECT_EQ(whole->weights().layers.size(), 4u);  // block_count still counts the head

  with_head.omit_tensors = {"blk.4.nextn.hnorm.weight"};
  modelgen::write_random_gguf_model(with_head, modelgen::parse_gguf_recipe("q8_0"),
                                    dir_ + "/broken.gguf");
  hide_gguf_key(dir_ + "/broken.gguf", "qwen35.nextn_predict_layers");
  modelgen::write_random_gguf_model(options(Arch::kQwen35, Layout::kHF, false),
                                    modelgen::parse_gguf_recipe("q8_0"), dir_ + "/plain.gguf");
  expect_dropped("broken.gguf", "incomplete (missing blk.4.nextn.hnorm.weight)", "plain.gguf");
}

TEST_F(OptionalPartsTest, MissingOrMalformedCoreTensorStillFails) {
  write_full(Arch::kQwen35, Layout::kHF);
  const std::string norm = "model.language_model.layers.0.input_layernorm.weight";
  copy_checkpoint(dir_ + "/full", dir_ + "/no-norm",
                  [&](const std::string& name, auto&) { return name != norm; });
  EXPECT_NE(error_of([&] { Model::load(dir_ + "/no-norm"); }).find("missing tensor '" + norm),
            std::string::npos);

  const std::string q = "model.language_model.layers.3.self_attn.q_proj.weight";
  copy_checkpoint(dir_ + "/full", dir_ + "/bad-q", [&](const std::string& name, auto& t) {
    if (name == q) {
      t.shape[0] /= 2;
      t.bytes.resize(t.bytes.size() / 2);
    }
    return true;
  });
  EXPECT_NE(error_of([&] { Model::load(dir_ + "/bad-q"); }).find("tensor '" + q + "': wrong shape"),
            std::string::npos);

  // Also with the head broken at the same time: the core error wins.
  copy_checkpoint(dir_ + "/full", dir_ + "/both", [&](const std::string& name, auto&) {
    return name != norm && name != "mtp.norm.weight";
  });
  EXPECT_NE(error_of([&] { Model::load(dir_ + "/both"); }).find("missing tensor '" + norm),
            std::string::npos);

  auto gguf = options(Arch::kQwen35, Layout::kHF, true);
  gguf.omit_tensors = {"blk.1.ssm_a"};
  modelgen::write_random_gguf_model(gguf, modelgen::parse_gguf_recipe("f32"), dir_ + "/m.gguf");
  EXPECT_NE(error_of([&] { Model::load(dir_ + "/m.gguf"); }).find("blk.1.ssm_a is missing"),
            std::string::npos);
}

TEST_F(OptionalPartsTest, WholeVisionTowerLoadsAndAnIncompleteOneIsDroppedWithAWarning) {
  auto o = options(Arch::kQwen35, Layout::kHF, false);
  o.shape.vision = true;
  modelgen::write_random_model(o, dir_ + "/vision");
  std::shared_ptr<const Model> whole;
  EXPECT_TRUE(warnings_of([&] { whole = Model::load(dir_ + "/vision"); }).empty());
  ASSERT_TRUE(whole->has_vision());
  EXPECT_EQ(whole->vision_unavailable_reason(), "");
  const int patch_dim = whole->weights().vision->config.patch_dim();
  // A 2 x 4 grid of patches: two 2 x 2 merge blocks, two embeddings of the LM's width.
  const std::vector<float> pixels(size_t(8) * patch_dim, 0.25f);
  EXPECT_EQ(whole->encode_image(pixels, {1, 2, 4}).size(), size_t(2) * o.shape.hidden);
  EXPECT_NE(error_of([&] {
              whole->encode_image(pixels, {1, 2, 3});
            }).find("multiples of 2"),
            std::string::npos);

  // One tensor short: one warning naming it, a text model whose logits are the whole one's.
  copy_checkpoint(dir_ + "/vision", dir_ + "/partial", [](const std::string& name, auto&) {
    return name != "model.visual.blocks.1.mlp.linear_fc2.bias";
  });
  std::shared_ptr<const Model> partial;
  const auto warnings = warnings_of([&] { partial = Model::load(dir_ + "/partial"); });
  ASSERT_EQ(warnings.size(), 1u) << ::testing::PrintToString(warnings);
  EXPECT_NE(warnings[0].find("model: vision tower incomplete (missing "
                             "model.visual.blocks.1.mlp.linear_fc2.bias); images are not read"),
            std::string::npos)
      << warnings[0];
  EXPECT_FALSE(partial->has_vision());
  EXPECT_NE(error_of([&] {
              partial->encode_image(pixels, {1, 2, 4});
            }).find("incomplete"),
            std::string::npos);
  EXPECT_EQ(logits_of(*partial), logits_of(*whole));

  // A stray tower tensor beside a text model is dropped the same way; the MTP head is unharmed.
  write_full(Arch::kQwen35, Layout::kHF);
  testing::TensorMap tower;
  tower["model.visual.blocks.0.attn.qkv.weight"] = testing::f32_blob({4, 2}, std::vector<float>(8));
  copy_checkpoint(
      dir_ + "/full", dir_ + "/stray", [](const std::string&, auto&) { return true; }, tower);
  std::shared_ptr<const Model> stray;
  EXPECT_EQ(warnings_of([&] { stray = Model::load(dir_ + "/stray"); }).size(), 1u);
  EXPECT_TRUE(stray->has_mtp());
  EXPECT_FALSE(stray->has_vision());

  // No tower at all (text-only conversions strip it): no warning, and the reason says so.
  std::shared_ptr<const Model> text;
  EXPECT_TRUE(warnings_of([&] { text = Model::load(dir_ + "/full"); }).empty());
  EXPECT_EQ(text->vision_unavailable_reason(), "the model has no vision tower");

  for (const char* name :
       {"model.visual.blocks.0.attn.qkv.weight", "visual.merger.mlp.0.weight",
        "vision_tower.patch_embed.proj.weight", "model.vision_tower.patch_embed.proj.weight"})
    EXPECT_EQ(optional_part_of(name), &vision_tower_part()) << name;
  for (const char* name :
       {"mtp.fc.weight", "language_model.mtp.norm.weight", "model.mtp.fc.weight"})
    EXPECT_EQ(optional_part_of(name), &mtp_head_part()) << name;
  EXPECT_EQ(optional_part_of("model.language_model.layers.0.mlp.gate_proj.weight"), nullptr);
  EXPECT_EQ(optional_part_of("lm_head.weight"), nullptr);
}

}  // namespace
}  // namespace qmlx
