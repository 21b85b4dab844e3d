// Tiling at load (model/weight_tiling.h): which matrices a loaded model has in 16-row tiles, and
// the byte-range bookkeeping that decides what is read in and what is given back.
#include "model/weight_tiling.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "model/model.h"
#include "tiny_model.h"

namespace qmlx {
namespace {

TEST(WeightTilingTest, RangesMergeAndCoverage) {
  static uint8_t bytes[100];
  const std::vector<ByteRange> m =
      merged({{bytes + 50, 10}, {bytes, 10}, {bytes + 10, 5}, {bytes + 55, 20}, {bytes + 90, 0}});
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].data, bytes);
  EXPECT_EQ(m[0].bytes, 15u);
  EXPECT_EQ(m[1].data, bytes + 50);
  EXPECT_EQ(m[1].bytes, 25u);
  EXPECT_TRUE(covered_by({bytes + 3, 12}, m));
  EXPECT_FALSE(covered_by({bytes + 3, 13}, m));
  EXPECT_FALSE(covered_by({bytes + 20, 1}, m));
  EXPECT_TRUE(covered_by({bytes + 60, 15}, m));
  EXPECT_FALSE(covered_by({bytes + 40, 15}, m));
  EXPECT_TRUE(covered_by({bytes + 40, 0}, m));
}

// A 4-bit MoE model: attention, Gated DeltaNet, shared expert, router and the tied head are
// tiled; the routed experts stay row by row; QMLX_AFFINE_TILES=0 tiles nothing.
TEST(WeightTilingTest, DecodeMatricesAreTiledAndRoutedExpertsAreNot) {
  const std::string dir = testing::make_temp_dir("weight-tiling");
  testing::TinyModelSpec spec{"qwen3_5_moe", "mlx"};
  spec.bits = 4;
  spec.tie = true;
  testing::write_tiny_model(dir, spec);
  for (bool enabled : {true, false}) {
    SCOPED_TRACE(enabled ? "tiles" : "QMLX_AFFINE_TILES=0");
    if (!enabled) setenv("QMLX_AFFINE_TILES", "0", 1);
    auto model = Model::load(dir);
    unsetenv("QMLX_AFFINE_TILES");
    const ModelWeights& w = model->weights();
    EXPECT_EQ(w.embed.tiled, enabled);
    EXPECT_EQ(w.head.tiled, enabled);
    if (model->config().tie_word_embeddings) {
      EXPECT_EQ(w.head.data, w.embed.data) << "a tied head is the embedding's one tiled copy";
    }
    bool saw_delta = false, saw_attention = false, saw_experts = false;
    for (const LayerWeights& l : w.layers) {
      if (l.full_attention) {
        saw_attention = true;
        EXPECT_EQ(l.attention.q.tiled, enabled);
        EXPECT_EQ(l.attention.o.tiled, enabled);
      } else {
        saw_delta = true;
        EXPECT_EQ(l.delta_net.qkv.tiled, enabled);
        EXPECT_EQ(l.delta_net.out.tiled, enabled);
      }
      if (l.moe) {
        EXPECT_EQ(l.moe_ffn.router.tiled, enabled && l.moe_ffn.router.quantized());
        for (const MlpWeights& e : l.moe_ffn.experts) {
          saw_experts = true;
          EXPECT_FALSE(e.gate.tiled || e.up.tiled || e.down.tiled);
        }
      }
    }
    EXPECT_TRUE(saw_delta && saw_attention && saw_experts);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace qmlx
