#include "base/base64.h"

#include <gtest/gtest.h>

namespace qmlx {
namespace {

// RFC 4648 section 10 test vectors.
TEST(Base64, EncodesTheRfcVectors) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_encode("foob"), "Zm9vYg==");
  EXPECT_EQ(base64_encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
}

TEST(Base64, RoundTripsEveryByteValue) {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes += char(i);
  for (size_t n = 0; n <= bytes.size(); n += 37) {
    std::string part = bytes.substr(0, n);
    EXPECT_EQ(base64_decode(base64_encode(part)), part) << n;
  }
}

TEST(Base64, RejectsMalformedText) {
  EXPECT_EQ(base64_decode("Zg="), std::nullopt);       // not a multiple of 4
  EXPECT_EQ(base64_decode("Z!=="), std::nullopt);      // outside the alphabet
  EXPECT_EQ(base64_decode("Zg==Zg=="), std::nullopt);  // padding before the end
  EXPECT_EQ(base64_decode("Z=g="), std::nullopt);      // a digit after padding
  EXPECT_EQ(base64_decode("===="), std::nullopt);
}

}  // namespace
}  // namespace qmlx
