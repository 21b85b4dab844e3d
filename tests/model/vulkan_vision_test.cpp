// The vision tower on the Vulkan device (model/vulkan/vision_forward.h) against the CPU encoder
// (model/vision_encoder.h), on tiny random towers in every layout the device reads: Hugging
// Face files in f32 and bf16, mlx-vlm's `vision_tower.*` beside an MLX 4-bit language model,
// and a llama.cpp mmproj GGUF in f16 attached to a model (--mmproj). Grids: one merge block, a
// non-square one of 2 x 3 merge blocks, two frames of 2 x 4 patches, a tall 8 x 4.
//
// Tolerance: the device's matmuls and attention sum in other orders than the CPU's packed GEMM
// (backend/vulkan/matmul.h, bidirectional_attention.h) and its erf is a fit (gelu.h), so each
// operation agrees to a few ulp and the encoder's embeddings within 2e-5 of the largest
// embedding's magnitude (measured on lavapipe: about 2e-6 of 1.3 to 2.6, i.e. 1e-6; the test
// prints it; the exact GELU in the blocks in place of the tanh one, 2e-4 off, fails it). What must
// hold exactly: the same image twice gives the same bits, images encoded while the language
// model runs forward steps on other threads are those bits too, and a tower that does not fit
// beside the weights stays on the CPU with one warning (its images then the CPU's bits).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "backend/vulkan/device_probe.h"
#include "backend/vulkan/validation_report.h"
#include "captured_log.h"
#include "model/model.h"
#include "model/vision_encoder.h"
#include "modelgen/mmproj_writer.h"
#include "modelgen/model_writer.h"
#include "tiny_model.h"
#include "vulkan_model_checks.h"

namespace qmlx {
namespace {

using testing::expect_no_validation_findings;
using testing::vulkan_skip_reason;

using modelgen::Arch;
using modelgen::Layout;

modelgen::ModelOptions tower_options(Layout layout, modelgen::TensorDType dtype, int bits) {
  modelgen::ModelOptions o;
  o.arch = Arch::kQwen35;
  o.layout = layout;
  o.dtype = dtype;
  if (bits) o.quantization = modelgen::QuantParams{bits, 32};
  o.shape = modelgen::default_shape(o.arch);
  o.shape.vision = true;
  o.seed = 23;
  return o;
}

std::vector<float> pixels_for(const Model& model, const PatchGrid& grid, int seed) {
  const int patch_dim = model.weights().vision->config.patch_dim();
  std::vector<float> pixels(size_t(grid.patches()) * patch_dim);
  for (size_t i = 0; i < pixels.size(); ++i)
    pixels[i] = float(int((i + size_t(seed)) * 7919 % 201) - 100) / 100;
  return pixels;
}

const PatchGrid kGrids[] = {{1, 2, 2}, {1, 4, 6}, {2, 2, 4}, {1, 8, 4}};

// on_device: the tower on the device whatever it is (--mmproj-offload on; lavapipe, the CPU
// itself, would keep it on the CPU encoder under auto).
std::shared_ptr<const Model> load(
    const std::string& path, bool on_device, const std::string& mmproj = "",
    ModelLoadOptions::TowerOffload offload = ModelLoadOptions::TowerOffload::kOn) {
  ModelLoadOptions options;
  if (on_device) options.device = "vulkan";
  options.mmproj = mmproj;
  options.vision_offload = offload;
  return Model::load(path, {}, options);
}

class VulkanVisionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    skip_ = vulkan_skip_reason();
    dir_ = testing::make_temp_dir("vulkan_vision");
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
  }
  void TearDown() override {
    if (skip_.empty()) expect_no_validation_findings();
  }

  // The device model's embeddings against the CPU model's for every grid, and twice alike.
  static void expect_matches_cpu(const Model& cpu, const Model& device) {
    ASSERT_NE(device.device(), nullptr);
    ASSERT_TRUE(device.device()->has_vision());
    EXPECT_NE(device.device()->description().find("vision tower on the device"), std::string::npos);
    for (const PatchGrid& grid : kGrids) {
      SCOPED_TRACE(std::to_string(grid.t) + "x" + std::to_string(grid.h) + "x" +
                   std::to_string(grid.w));
      const std::vector<float> pixels = pixels_for(cpu, grid, grid.h * 10 + grid.w);
      const std::vector<float> expected = cpu.encode_image(pixels, grid);
      const std::vector<float> got = device.encode_image(pixels, grid);
      ASSERT_EQ(got.size(), expected.size());
      float largest = 0, worst = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        largest = std::max(largest, std::abs(expected[i]));
        worst = std::max(worst, std::abs(got[i] - expected[i]));
      }
      EXPECT_LE(worst, 2e-5f * largest) << "largest " << largest;
      std::printf("[ vision   ] grid %dx%dx%d: max |device - cpu| %.3g of max |cpu| %.3g\n", grid.t,
                  grid.h, grid.w, double(worst), double(largest));
      EXPECT_EQ(device.encode_image(pixels, grid), got) << "not deterministic";
    }
  }

  static std::string skip_, dir_;
};

std::string VulkanVisionTest::skip_, VulkanVisionTest::dir_;

TEST_F(VulkanVisionTest, MatchesTheCpuEncoderInEveryLayout) {
  struct Variant {
    const char* name;
    Layout layout;
    modelgen::TensorDType dtype;
    int bits;
  };
  for (const Variant& v : {Variant{"hf_f32", Layout::kHF, modelgen::TensorDType::kF32, 0},
                           Variant{"hf_bf16", Layout::kHF, modelgen::TensorDType::kBF16, 0},
                           Variant{"mlx_4bit", Layout::kMLX, modelgen::TensorDType::kF32, 4}}) {
    SCOPED_TRACE(v.name);
    const std::string path = dir_ + "/" + v.name;
    modelgen::write_random_model(tower_options(v.layout, v.dtype, v.bits), path);
    expect_matches_cpu(*load(path, false), *load(path, true));
  }
}

TEST_F(VulkanVisionTest, MatchesTheCpuEncoderForAnMmprojTower) {
  const std::string path = dir_ + "/for_mmproj", mmproj = dir_ + "/tower_f16.gguf";
  modelgen::write_random_model(tower_options(Layout::kHF, modelgen::TensorDType::kF32, 0), path);
  auto f16 = tower_options(Layout::kHF, modelgen::TensorDType::kF16, 0);
  f16.seed = 29;  // another tower than the checkpoint's, which the mmproj replaces
  modelgen::write_random_mmproj(f16, mmproj);
  const auto cpu = load(path, false, mmproj), device = load(path, true, mmproj);
  ASSERT_EQ(device->weights().vision->patch_embed.weight.format, WeightFormat::kF16);
  expect_matches_cpu(*cpu, *device);
}

// A tower that does not fit beside the weights ($QMLX_VULKAN_MEMORY_MB) stays on the CPU with
// one warning; the model loads, and its images are the CPU's bits. weight_bytes() counts a
// tower on the device, and only then.
TEST_F(VulkanVisionTest, ATowerThatDoesNotFitStaysOnTheCpu) {
  auto o = tower_options(Layout::kHF, modelgen::TensorDType::kF32, 0);
  o.shape.vision_tower.hidden = 256;  // 4 MiB a block: the tower outweighs the tiny model
  o.shape.vision_tower.heads = 4;
  o.shape.vision_tower.intermediate = 1024;
  o.shape.vision_tower.depth = 4;
  const std::string path = dir_ + "/big_tower";
  modelgen::write_random_model(o, path);
  const auto cpu = load(path, false), fits = load(path, true);
  ASSERT_TRUE(fits->device()->has_vision());
  const size_t with_tower = fits->device()->weight_bytes();

  ASSERT_EQ(setenv("QMLX_VULKAN_MEMORY_MB", "8", 1), 0);
  std::shared_ptr<const Model> small;
  const auto lines = testing::stderr_lines([&] { small = load(path, true); });
  unsetenv("QMLX_VULKAN_MEMORY_MB");
  const auto warnings = testing::lines_containing(lines, " warn ");
  ASSERT_EQ(warnings.size(), 1u) << ::testing::PrintToString(lines);
  EXPECT_NE(warnings[0].find("the vision tower stays on the CPU"), std::string::npos)
      << warnings[0];
  ASSERT_TRUE(small->has_vision());
  EXPECT_FALSE(small->device()->has_vision());
  EXPECT_LT(small->device()->weight_bytes() + (16u << 20), with_tower);
  EXPECT_EQ(small->device()->description().find("vision"), std::string::npos);
  const PatchGrid grid{1, 4, 4};
  const std::vector<float> pixels = pixels_for(*cpu, grid, 3);
  EXPECT_EQ(small->encode_image(pixels, grid), cpu->encode_image(pixels, grid));
}

// --mmproj-offload: off keeps the tower on the CPU encoder; auto puts it on the device unless the
// device is the CPU's own cores (lavapipe), saying so in one line.
TEST_F(VulkanVisionTest, MmprojOffloadPlacesTheTower) {
  const std::string path = dir_ + "/offload";
  modelgen::write_random_model(tower_options(Layout::kHF, modelgen::TensorDType::kF32, 0), path);
  const auto off = load(path, true, "", ModelLoadOptions::TowerOffload::kOff);
  ASSERT_TRUE(off->has_vision());
  EXPECT_FALSE(off->device()->has_vision());
  std::shared_ptr<const Model> automatic;
  const auto lines = testing::stderr_lines(
      [&] { automatic = load(path, true, "", ModelLoadOptions::TowerOffload::kAuto); });
  const bool cpu_cores = automatic->device()->runs_on_cpu_cores();
  EXPECT_EQ(automatic->device()->has_vision(), !cpu_cores);
  EXPECT_EQ(testing::lines_containing(lines, "the device is the CPU's own cores").size(),
            cpu_cores ? 1u : 0u)
      << ::testing::PrintToString(lines);
  const PatchGrid grid{1, 4, 4};
  const std::vector<float> pixels = pixels_for(*off, grid, 5);
  EXPECT_EQ(off->encode_image(pixels, grid), load(path, false)->encode_image(pixels, grid));
}

// Images encoded on two threads while a third runs the language model's forward steps on the
// same device: every result is the bits it has alone.
TEST_F(VulkanVisionTest, EncodesBesideForwardStepsOnOtherThreads) {
  const std::string path = dir_ + "/threads";
  modelgen::write_random_model(tower_options(Layout::kHF, modelgen::TensorDType::kF32, 0), path);
  const auto model = load(path, true);
  ASSERT_TRUE(model->device()->has_vision());
  const PatchGrid grid{1, 4, 6};
  const std::vector<float> pixels = pixels_for(*model, grid, 5);
  const std::vector<float> alone = model->encode_image(pixels, grid);
  const std::vector<int32_t> prompt = {5, 80, 13, 200, 7, 9, 31};
  std::vector<float> logits_alone(size_t(model->config().vocab_size));
  {
    ModelState state = model->new_state(KvType::kF32);
    model->forward(prompt, state, logits_alone.data());
  }
  std::atomic<int> image_mismatches{0}, logit_mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 4; ++i)
        if (model->encode_image(pixels, grid) != alone) ++image_mismatches;
    });
  threads.emplace_back([&] {
    for (int i = 0; i < 6; ++i) {
      ModelState state = model->new_state(KvType::kF32);
      std::vector<float> logits(logits_alone.size());
      model->forward(prompt, state, logits.data());
      if (logits != logits_alone) ++logit_mismatches;
    }
  });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(image_mismatches.load(), 0);
  EXPECT_EQ(logit_mismatches.load(), 0);
}

}  // namespace
}  // namespace qmlx
