// Model::load's progress: it starts at 0, never goes back, and ends at the total, which is the
// size of every tensor in the checkpoint, counted here from the fixture's own tensors.
#include <gtest/gtest.h>

#include <filesystem>

#include "model/model.h"
#include "tiny_model.h"

namespace qmlx {
namespace {

struct Report {
  uint64_t done, total;
};

TEST(LoadProgressTest, RisesMonotonicallyToTheBytesOfAllTensors) {
  std::string dir = testing::make_temp_dir("load-progress");
  testing::TinyModelSpec spec{"qwen3_5_moe", "mlx"};
  spec.bits = 4;
  testing::TinyModel tiny = testing::build_tiny_model(spec);
  testing::write_model(dir, tiny);
  uint64_t expected_total = 0;
  for (const auto& [name, blob] : tiny.tensors) expected_total += blob.bytes.size();

  std::vector<Report> reports;
  auto model = Model::load(dir, [&](uint64_t done, uint64_t total) {
    reports.push_back({done, total});
  });
  std::filesystem::remove_all(dir);

  ASSERT_GE(reports.size(), 2u);
  EXPECT_EQ(reports.front().done, 0u);
  for (size_t i = 0; i < reports.size(); ++i) {
    EXPECT_EQ(reports[i].total, expected_total) << i;
    if (i > 0) {
      EXPECT_GE(reports[i].done, reports[i - 1].done) << i;
    }
  }
  EXPECT_EQ(reports.back().done, expected_total);
  EXPECT_GT(model->config().num_layers, 0);
}

TEST(LoadProgressTest, LoadingWithoutACallbackWorks) {
  std::string dir = testing::make_temp_dir("load-progress");
  testing::write_tiny_model(dir, {"qwen3", "hf"});
  EXPECT_NE(Model::load(dir), nullptr);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace qmlx
