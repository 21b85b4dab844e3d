// parse_preprocessor_config: Qwen3.5's own file, the older key forms, defaults for what a file
// leaves out, and refusals that name the file and key.
#include <gtest/gtest.h>

#include "base/error.h"
#include "image/preprocessor_config.h"

namespace qmlx::image {
namespace {

// Qwen3.5's preprocessor_config.json as the checkpoint ships it.
constexpr char kQwen35[] = R"({
  "size": {"longest_edge": 16777216, "shortest_edge": 65536},
  "patch_size": 16, "temporal_patch_size": 2, "merge_size": 2,
  "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
  "processor_class": "Qwen3VLProcessor", "image_processor_type": "Qwen2VLImageProcessorFast"})";

TEST(PreprocessorConfig, ReadsQwen35sFile) {
  const VisionPreprocessConfig c = parse_preprocessor_config(kQwen35, "p.json");
  EXPECT_EQ(c.patch_size, 16);
  EXPECT_EQ(c.temporal_patch_size, 2);
  EXPECT_EQ(c.merge_size, 2);
  EXPECT_EQ(c.min_pixels, 65536);
  EXPECT_EQ(c.max_pixels, 16777216);
  EXPECT_EQ(c.mean, (std::array<float, 3>{0.5f, 0.5f, 0.5f}));
  EXPECT_EQ(c.std, (std::array<float, 3>{0.5f, 0.5f, 0.5f}));
}

TEST(PreprocessorConfig, ReadsOtherKeyFormsAndKeepsDefaults) {
  // Qwen2-VL's file: CLIP's mean and std, top-level min/max_pixels over size's edges.
  const VisionPreprocessConfig c = parse_preprocessor_config(R"({
      "min_pixels": 3136, "max_pixels": 12845056, "patch_size": 14,
      "size": {"shortest_edge": 1, "longest_edge": 2},
      "image_mean": [0.48145466, 0.4578275, 0.40821073],
      "image_std": [0.26862954, 0.26130258, 0.27577711], "rescale_factor": 0.00392156862745098})",
                                                             "p.json");
  EXPECT_EQ(c.patch_size, 14);
  EXPECT_EQ(c.merge_size, 2);  // left out: the default
  EXPECT_EQ(c.min_pixels, 3136);
  EXPECT_EQ(c.max_pixels, 12845056);
  EXPECT_FLOAT_EQ(c.mean[2], 0.40821073f);
  EXPECT_FLOAT_EQ(c.std[0], 0.26862954f);
  const VisionPreprocessConfig old =
      parse_preprocessor_config(R"({"size": {"min_pixels": 100, "max_pixels": 200}})", "p.json");
  EXPECT_EQ(old.min_pixels, 100);
  EXPECT_EQ(old.max_pixels, 200);
  const VisionPreprocessConfig empty = parse_preprocessor_config("{}", "p.json");
  EXPECT_EQ(empty.max_pixels, VisionPreprocessConfig().max_pixels);
  EXPECT_EQ(empty.rescale_factor, 1.0 / 255.0);
}

TEST(PreprocessorConfig, RefusalsNameTheFileAndKey) {
  auto message = [](const char* text) {
    try {
      parse_preprocessor_config(text, "dir/preprocessor_config.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("[1]").find("dir/preprocessor_config.json: not a JSON object"),
            std::string::npos);
  EXPECT_NE(message(R"({"patch_size": 0})").find("\"patch_size\" must be a positive integer"),
            std::string::npos);
  EXPECT_NE(message(R"({"size": {"longest_edge": -5}})").find("\"size.longest_edge\""),
            std::string::npos);
  EXPECT_NE(message(R"({"image_std": [0.5, 0, 0.5]})").find("\"image_std\" must be positive"),
            std::string::npos);
  EXPECT_NE(message(R"({"image_mean": [0.5]})").find("\"image_mean\" must be 3 numbers"),
            std::string::npos);
  EXPECT_NE(message(R"({"min_pixels": 500, "max_pixels": 100})").find("is larger than"),
            std::string::npos);
}

}  // namespace
}  // namespace qmlx::image
