#include "modelgen/tensor_dtype.h"

#include <gtest/gtest.h>

namespace qmlx::modelgen {
namespace {

TEST(TensorDType, Bf16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16(-2.0f), 0xc000);
  // 1 + 2^-8 lies exactly between 1 and 1 + 2^-7: ties go to the even mantissa (1.0).
  EXPECT_EQ(float_to_bf16(1.0f + 1.0f / 256), 0x3f80);
  // 1 + 3 * 2^-8 lies between 1 + 2^-7 (odd) and 1 + 2^-6 (even): rounds up to even.
  EXPECT_EQ(float_to_bf16(1.0f + 3.0f / 256), 0x3f82);
  EXPECT_FLOAT_EQ(bf16_to_float(0x4049), 3.140625f);
}

TEST(TensorDType, F16MatchesIeeeHalf) {
  EXPECT_EQ(float_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(float_to_f16(-0.5f), 0xb800);
  EXPECT_EQ(float_to_f16(65504.0f), 0x7bff);
  EXPECT_FLOAT_EQ(f16_to_float(0x3555), 0.333251953125f);
}

TEST(TensorDType, ParsesFlagNames) {
  EXPECT_EQ(parse_float_dtype("bf16"), TensorDType::kBF16);
  EXPECT_EQ(parse_float_dtype("f16"), TensorDType::kF16);
  EXPECT_EQ(parse_float_dtype("f32"), TensorDType::kF32);
  EXPECT_THROW(parse_float_dtype("int8"), std::exception);
}

}  // namespace
}  // namespace qmlx::modelgen
