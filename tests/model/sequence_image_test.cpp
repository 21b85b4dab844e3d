// Where images sit on Qwen3.5's M-RoPE positions (model/sequence_image.h), against transformers'
// get_rope_index worked by hand: "ab<image 2x3>c<image 1x1>d".
#include <gtest/gtest.h>

#include "base/error.h"
#include "model/sequence_image.h"

namespace qmlx {
namespace {

TEST(SequenceImage, PositionsFollowGetRopeIndex) {
  std::vector<SequenceImage> images(2);
  images[0].first_row = 2;
  images[0].grid_h = 2;
  images[0].grid_w = 3;  // rows 2..7
  images[1].first_row = 9;
  images[1].grid_h = 1;
  images[1].grid_w = 1;  // row 9
  place_images(images);
  EXPECT_EQ(images[0].first_position, 2);
  // Text after the first image resumes at 2 + max(2, 3) = 5: row 8 ('c') is at 5.
  EXPECT_EQ(images[1].first_position, 6);  // row 9 = 6 after 'c' at 5
  auto at = [&](int64_t row) { return rope_position(images, row); };
  EXPECT_EQ(at(0).t, 0);
  EXPECT_EQ(at(1).w, 1);
  // Pad k of the 2x3 image: (2, 2 + k / 3, 2 + k % 3).
  EXPECT_EQ(at(2).t, 2);
  EXPECT_EQ(at(2).h, 2);
  EXPECT_EQ(at(2).w, 2);
  EXPECT_EQ(at(6).t, 2);
  EXPECT_EQ(at(6).h, 3);
  EXPECT_EQ(at(6).w, 3);
  EXPECT_EQ(at(7).h, 3);
  EXPECT_EQ(at(7).w, 4);
  EXPECT_EQ(at(8).t, 5);
  EXPECT_EQ(at(8).h, 5);
  EXPECT_EQ(at(9).t, 6);
  EXPECT_EQ(at(10).t, 7);  // 'd': 6 + max(1, 1)
  EXPECT_EQ(rope_delta_at(images, 2), 0);
  EXPECT_EQ(rope_delta_at(images, 7), 0) << "an image not wholly in gives no delta yet";
  EXPECT_EQ(rope_delta_at(images, 8), 5 - 8);
  EXPECT_EQ(rope_delta_at(images, 11), 7 - 10);
}

TEST(SequenceImage, TextOnlyIsTheTokenIndex) {
  for (int64_t row : {0, 1, 1000}) {
    RopePosition p = rope_position({}, row);
    EXPECT_EQ(p.t, row);
    EXPECT_EQ(p.h, row);
    EXPECT_EQ(p.w, row);
  }
}

TEST(SequenceImage, OverlappingOrEmptyImagesAreRefused) {
  std::vector<SequenceImage> images(2);
  images[0].first_row = 0;
  images[0].grid_h = images[0].grid_w = 2;
  images[1].first_row = 3;
  images[1].grid_h = images[1].grid_w = 1;
  EXPECT_THROW(place_images(images), Error);
  images[1].first_row = 4;
  images[1].grid_w = 0;
  EXPECT_THROW(place_images(images), Error);
}

}  // namespace
}  // namespace qmlx
