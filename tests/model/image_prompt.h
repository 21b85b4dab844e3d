// The image tests' prompt: [5 text | a 2 x 3 image | 4 text] (the text after the image resumes
// at position 5 + 3 = 8, row 11), with the image's random normal embedding rows, placed (its
// M-RoPE positions set). Shared by the CPU and the Vulkan image tests, so both feed the same.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "model/sequence_image.h"

namespace qmlx::testing {

struct ImagePrompt {
  std::vector<int32_t> tokens;
  std::vector<SequenceImage> images;
};

inline ImagePrompt two_by_three_image_prompt(int32_t pad, int hidden) {
  ImagePrompt p;
  p.tokens = {10, 20, 30, 40, 50, pad, pad, pad, pad, pad, pad, 60, 70, 80, 90};
  SequenceImage image;
  image.first_row = 5;
  image.grid_h = 2;
  image.grid_w = 3;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.f, 1.f);
  auto embeddings = std::make_shared<std::vector<float>>(size_t(image.rows()) * size_t(hidden));
  for (float& x : *embeddings) x = normal(rng);
  image.embeddings = embeddings;
  p.images = {image};
  place_images(p.images);
  return p;
}

}  // namespace qmlx::testing
