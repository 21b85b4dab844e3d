// GGUF: the generator's quantizers against the engine's decoder, and the reader's errors on
// malformed files.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>

#include "base/error.h"
#include "kernels/gguf_blocks.h"
#include "model/gguf_file.h"
#include "model/model.h"
#include "modelgen/gguf_file_writer.h"
#include "modelgen/gguf_model_writer.h"
#include "modelgen/gguf_quantizer.h"

namespace qmlx {
namespace {

using modelgen::GgufQuant;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("qmlx_gguf_test_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

struct RoundTrip {
  GgufQuant type;
  // Bound on max |x - decoded| / max |x| for normal values: half a quantization step of the
  // format's coarsest case (plus the f16 rounding of its scales). Q4_0 / Q5_0 scale by the
  // signed extreme (d = max / -8 or -16), so a value of the opposite sign and equal magnitude
  // clamps one full step short: their bound is 1/8 and 1/16 of the block maximum.
  double max_rel_error;
};

class GgufQuantizerTest : public ::testing::TestWithParam<RoundTrip> {};

TEST_P(GgufQuantizerTest, EngineDecodesWhatTheGeneratorEncoded) {
  const auto [type, bound] = GetParam();
  const size_t n = 256 * 16;
  std::mt19937_64 rng(11);
  std::normal_distribution<float> d(0.f, 0.5f);
  std::vector<float> x(n);
  for (float& v : x) v = d(rng);
  const auto bytes = modelgen::gguf_quantize(type, x.data(), n);
  const auto engine_type = gguf_type_from_id(uint32_t(type));
  ASSERT_TRUE(engine_type.has_value());
  ASSERT_EQ(bytes.size(), gguf_bytes(*engine_type, n));
  std::vector<float> y(n);
  gguf_dequantize(*engine_type, bytes.data(), n, y.data());
  // Per block, relative to that block's largest magnitude (the scale every format derives).
  const size_t block = gguf_block_elems(*engine_type) == 1 ? 32 : gguf_block_elems(*engine_type);
  double worst = 0;
  for (size_t b = 0; b < n; b += block) {
    double amax = 0, err = 0;
    for (size_t i = b; i < b + block; ++i) {
      amax = std::max(amax, double(std::fabs(x[i])));
      err = std::max(err, double(std::fabs(x[i] - y[i])));
    }
    worst = std::max(worst, err / amax);
  }
  EXPECT_LT(worst, bound) << modelgen::gguf_quant_name(type);
}

INSTANTIATE_TEST_SUITE_P(
    AllTypes, GgufQuantizerTest,
    ::testing::Values(RoundTrip{GgufQuant::kF32, 1e-7}, RoundTrip{GgufQuant::kF16, 1e-3},
                      RoundTrip{GgufQuant::kBF16, 8e-3}, RoundTrip{GgufQuant::kQ8_0, 6e-3},
                      RoundTrip{GgufQuant::kQ4_0, 0.13}, RoundTrip{GgufQuant::kQ4_1, 0.07},
                      RoundTrip{GgufQuant::kQ5_0, 0.065}, RoundTrip{GgufQuant::kQ5_1, 0.035},
                      RoundTrip{GgufQuant::kQ2_K, 0.6}, RoundTrip{GgufQuant::kQ3_K, 0.2},
                      RoundTrip{GgufQuant::kQ4_K, 0.12}, RoundTrip{GgufQuant::kQ5_K, 0.06},
                      RoundTrip{GgufQuant::kQ6_K, 0.03}),
    [](const auto& info) { return std::string(modelgen::gguf_quant_name(info.param.type)); });

std::string write_tiny_gguf(const std::string& name) {
  modelgen::ModelOptions options;
  options.arch = modelgen::Arch::kQwen3;
  options.shape = modelgen::default_shape(options.arch);
  const std::string path = temp_path(name);
  modelgen::write_random_gguf_model(options, modelgen::parse_gguf_recipe("q8_0"), path);
  return path;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(GgufFileTest, ReadsWhatTheGeneratorWrote) {
  const std::string path = write_tiny_gguf("ok.gguf");
  GgufFile file(path);
  EXPECT_EQ(file.version(), 3u);
  EXPECT_EQ(file.metadata()["general.architecture"], "qwen3");
  const GgufTensor* q = file.find("blk.0.attn_q.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->type, GgufType::kQ8_0);
  EXPECT_NE(Model::load(path), nullptr);
  std::filesystem::remove(path);
}

TEST(GgufFileTest, TruncatedFileIsReported) {
  const std::string path = write_tiny_gguf("trunc.gguf");
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 100);
  EXPECT_NE(error_of([&] { GgufFile f(path); }).find("truncated"), std::string::npos);
  std::filesystem::resize_file(path, 40);
  EXPECT_NE(error_of([&] { GgufFile f(path); }).find("truncated"), std::string::npos);
  std::filesystem::remove(path);
}

TEST(GgufFileTest, BadMagicIsReported) {
  const std::string path = write_tiny_gguf("magic.gguf");
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.write("GGML", 4);
  }
  EXPECT_NE(error_of([&] { GgufFile f(path); }).find("bad magic"), std::string::npos);
  std::filesystem::remove(path);
}

TEST(GgufFileTest, UnsupportedTypeNamesTensorAndType) {
  modelgen::GgufFileWriter w;
  w.add_string("general.architecture", "qwen3");
  w.add_tensor("blk.0.attn_q.weight", {32, 2}, GgufQuant::kQ8_0,
               [] { return std::vector<uint8_t>(2 * 34, 0); });
  const std::string path = temp_path("iq.gguf");
  w.write(path);
  {
    // Patch the tensor's type id (just before its u64 offset at the end of the header) to 16,
    // ggml's IQ2_XXS.
    std::ifstream in(path, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
    const std::string name = "blk.0.attn_q.weight";
    const size_t at = std::search(bytes.begin(), bytes.end(), name.begin(), name.end()) -
                      bytes.begin() + name.size() + 4 + 2 * 8;
    bytes[at] = 16;
    std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
  }
  const std::string error = error_of([&] { GgufFile f(path); });
  EXPECT_NE(error.find("blk.0.attn_q.weight"), std::string::npos) << error;
  EXPECT_NE(error.find("IQ2_XXS"), std::string::npos) << error;
  std::filesystem::remove(path);
}

// Found by the GGUF fuzz target: two dimensions of 2^40 overflowed the element count, and the
// wrapped size could pass the bounds check. Such a tensor is refused by name.
TEST(GgufFileTest, ElementCountOverflowIsReported) {
  modelgen::GgufFileWriter w;
  w.add_string("general.architecture", "qwen3");
  w.add_tensor("blk.0.attn_q.weight", {32, 2}, GgufQuant::kQ8_0,
               [] { return std::vector<uint8_t>(2 * 34, 0); });
  const std::string path = temp_path("huge.gguf");
  w.write(path);
  {
    // Both u64 dimensions follow the name and its u32 dimension count.
    std::ifstream in(path, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
    const std::string name = "blk.0.attn_q.weight";
    const size_t at = std::search(bytes.begin(), bytes.end(), name.begin(), name.end()) -
                      bytes.begin() + name.size() + 4;
    const uint64_t huge = uint64_t(1) << 40;
    std::memcpy(&bytes[at], &huge, 8);
    std::memcpy(&bytes[at + 8], &huge, 8);
    std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
  }
  const std::string error = error_of([&] { GgufFile f(path); });
  EXPECT_NE(error.find("blk.0.attn_q.weight has more elements"), std::string::npos) << error;
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace qmlx
