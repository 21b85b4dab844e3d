// Multimodal RoPE angles (kernels/rope.h): which position each frequency takes, against the
// section rule of transformers' Qwen3-VL / Qwen2-VL rotary embeddings written out as tables.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/rope.h"

namespace qmlx {
namespace {

// The angle of frequency i at position p, as rope_angles computes it.
float cos_at(int64_t p, int i, int rot_dim, double theta) {
  return float(std::cos(double(p) * std::pow(theta, -2.0 * i / rot_dim)));
}

// Which of t (0), h (1), w (2) frequency i uses, as transformers builds it: the T frequencies
// everywhere, then for interleaving the H ones over slice(1, 3 * sec[1], 3) and the W ones over
// slice(2, 3 * sec[2], 3); without, contiguous sections.
std::vector<int> expected_axes(int half, const std::vector<int>& sec, bool interleaved) {
  std::vector<int> axis(half, 0);
  if (interleaved) {
    for (int i = 1; i < 3 * sec[1]; i += 3) axis[i] = 1;
    for (int i = 2; i < 3 * sec[2]; i += 3) axis[i] = 2;
  } else {
    for (int i = sec[0]; i < sec[0] + sec[1]; ++i) axis[i] = 1;
    for (int i = sec[0] + sec[1]; i < half; ++i) axis[i] = 2;
  }
  return axis;
}

TEST(MropeTest, EachFrequencyTakesItsSectionsPosition) {
  const double theta = 1e7;
  const int64_t pos[3] = {1000, 37, 5};
  struct Case {
    int rot_dim;
    std::vector<int> sections;
    bool interleaved;
  };
  // Qwen3.5's [11, 11, 10] over 64 rotary dims, a tiny model's, and a non-interleaved split.
  for (const Case& k : {Case{64, {11, 11, 10}, true}, Case{8, {2, 1, 1}, true},
                        Case{16, {3, 3, 2}, true}, Case{64, {16, 8, 8}, false}}) {
    const RopeAngles a =
        mrope_angles(pos[0], pos[1], pos[2], k.rot_dim, theta, k.sections, k.interleaved);
    const std::vector<int> axis = expected_axes(k.rot_dim / 2, k.sections, k.interleaved);
    ASSERT_EQ(a.cos.size(), size_t(k.rot_dim / 2));
    for (int i = 0; i < k.rot_dim / 2; ++i)
      EXPECT_EQ(a.cos[i], cos_at(pos[axis[i]], i, k.rot_dim, theta))
          << "rot_dim " << k.rot_dim << " frequency " << i;
  }
  // The interleaved Qwen3.5 pattern's start, spelled out: T H W T H W ...
  const std::vector<int> axis = expected_axes(32, {11, 11, 10}, true);
  EXPECT_EQ((std::vector<int>(axis.begin(), axis.begin() + 7)),
            (std::vector<int>{0, 1, 2, 0, 1, 2, 0}));
  EXPECT_EQ(axis[29], 2);  // W's last: 29 < 3 * 10
  EXPECT_EQ(axis[30], 0);
  EXPECT_EQ(axis[31], 1);  // H reaches further: 31 < 3 * 11
}

TEST(MropeTest, EqualPositionsAreThePlainRopeBitForBit) {
  const std::vector<int> sections = {11, 11, 10};
  for (int64_t p : {int64_t(0), int64_t(1), int64_t(17), int64_t(123456), int64_t(1) << 33}) {
    for (bool interleaved : {true, false}) {
      const RopeAngles m = mrope_angles(p, p, p, 64, 1e7, sections, interleaved);
      const RopeAngles r = rope_angles(p, 64, 1e7);
      EXPECT_EQ(m.cos, r.cos);
      EXPECT_EQ(m.sin, r.sin);
    }
  }
}

}  // namespace
}  // namespace qmlx
