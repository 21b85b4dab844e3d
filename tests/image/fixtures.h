// The fixtures make_image_fixtures.py wrote at build time (QMLX_IMAGE_FIXTURES): the manifest
// and the files it names, read whole.
#pragma once

#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "image/rgb_image.h"

namespace qmlx::image::testing {

inline std::vector<uint8_t> fixture_bytes(const std::string& name) {
  std::ifstream in(std::string(QMLX_IMAGE_FIXTURES) + "/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing fixture " << name;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline const nlohmann::json& manifest() {
  static const nlohmann::json parsed = [] {
    const std::vector<uint8_t> bytes = fixture_bytes("manifest.json");
    return nlohmann::json::parse(bytes.begin(), bytes.end());
  }();
  return parsed;
}

// A raw RGB8 fixture of the given size as an RgbImage.
inline RgbImage fixture_image(const std::string& name, int width, int height) {
  RgbImage image(width, height);
  image.pixels = fixture_bytes(name);
  EXPECT_EQ(image.pixels.size(), size_t(width) * size_t(height) * 3) << name;
  return image;
}

}  // namespace qmlx::image::testing
