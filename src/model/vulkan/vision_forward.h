// The vision tower on a Vulkan device: model/vision_encoder.cpp's encoder recorded from the
// backend's operations. The tower's weights are uploaded once (VisionTower's constructor);
// each image is one upload of its rows, one submission per block of the tower (so the
// language model's steps can run between them and each wait stays bounded by the context's
// fence timeout), and one download of its embeddings.
//
// Thread safety: encode() serialises images on the tower's own mutex (its scratch buffers) and
// takes `context_mutex`, the mutex its owner (vulkan_forward.cpp) holds around every recording
// and submission on the context, around each of its own submissions and around allocating and
// freeing its scratch (which lives for one image only).
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backend/vulkan/matmul.h"
#include "backend/vulkan/rope.h"
#include "model/vision_encoder.h"
#include "model/vision_weights.h"

namespace qmlx::vulkan {

struct DeviceLinear {
  DeviceMatrix weight;
  Buffer bias;
};

struct DeviceLayerNorm {
  Buffer weight, bias;
};

struct DeviceVisionBlock {
  DeviceLayerNorm norm1, norm2;
  DeviceLinear q, k, v;  // the rows of the fused qkv, as three matrices
  DeviceLinear proj, fc1, fc2;
};

class VisionTower {
 public:
  // Device memory `tower` takes once uploaded. Throws qmlx::Error for a format the device
  // kernels do not run (vision_tower_supported says which first).
  static uint64_t device_bytes(const VisionWeights& tower);
  // True when the device runs `tower`; otherwise *why names what it cannot run.
  static bool supported(const VisionWeights& tower, std::string* why);

  // Uploads `tower`, which must outlive this (its position grid is read per image).
  VisionTower(Context& context, const VisionWeights& tower);

  size_t bytes() const { return bytes_; }

  // encode_image (vision_encoder.h) on the device for input already checked with
  // check_image_input. std::nullopt, *why saying so, when the image is larger than the
  // device's bindings allow (one frame's rows of q, k or v over one binding): its caller
  // encodes it on the CPU instead. Throws qmlx::Error on a device failure.
  std::optional<std::vector<float>> encode(std::span<const float> pixel_values,
                                           const PatchGrid& grid, std::mutex& context_mutex,
                                           std::string* why) const;

 private:
  struct Scratch {
    Buffer pixels, positions, angles, rope_rows, x, normed, q, k, v, attention, delta, mlp, merged,
        out;
  };

  Context& context_;
  const VisionWeights& tower_;
  DeviceLinear patch_embed_;
  std::vector<DeviceVisionBlock> blocks_;
  DeviceLayerNorm merger_norm_;
  DeviceLinear merger_fc1_, merger_fc2_;
  RopeTable rope_table_;  // one row nobody reads: every patch brings its own angles
  size_t bytes_ = 0;
  mutable std::mutex mutex_;  // one image at a time: the scratch buffers
  mutable Scratch s_;
};

}  // namespace qmlx::vulkan
