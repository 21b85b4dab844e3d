// Test fixture: writes small random models in the real checkpoint layouts (HF and MLX, float or
// MLX-quantized) from one canonical set of weights, so tests can check that every layout of the
// same weights gives the same logits. Quantized variants snap the canonical weights to their
// quantization grid first, so an HF f32 copy holds exactly the dequantized values.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace qmlx::testing {

struct TensorBlob {
  std::string dtype;  // "F32", "BF16", "F16", "U32", ...
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};
using TensorMap = std::map<std::string, TensorBlob>;

void write_safetensors(const std::string& path, const TensorMap& tensors);
TensorBlob f32_blob(std::vector<int64_t> shape, const std::vector<float>& v);
TensorBlob bf16_blob(std::vector<int64_t> shape, const std::vector<float>& v);
TensorBlob f16_blob(std::vector<int64_t> shape, const std::vector<float>& v);

// MLX affine quantization of a [rows][cols] matrix (min/max per group, scales/biases bf16).
struct QuantizedBlobs {
  TensorBlob weight, scales, biases;
  std::vector<float> dequantized;  // what the engine should see
  std::vector<uint8_t> codes;      // [rows][cols], unpacked
  std::vector<float> scale_values, bias_values;
};
QuantizedBlobs quantize_affine(const std::vector<float>& w, std::vector<int64_t> lead, int rows,
                               int cols, int bits, int group_size);

struct TinyModelSpec {
  std::string arch = "qwen3_5";  // qwen3_5, qwen3_5_moe, qwen3_next, qwen3
  std::string layout = "hf";     // hf, mlx
  std::string float_dtype = "F32";
  int bits = 0;  // MLX quantization bits (0: float); MLX layout only
  int group_size = 32;
  bool snap_bits = false;  // snap weights to the `bits` grid even in a float layout
  bool tie = false;
  uint64_t seed = 1;
  int layers = 4;  // every 4th full attention (hybrid)
};

// Dimensions are fixed and small: hidden 64, vocab 128, 4 experts (top 2), head_dim 32.
struct TinyModel {
  nlohmann::json config;
  TensorMap tensors;
};
TinyModel build_tiny_model(const TinyModelSpec& spec);
// Writes config.json and model.safetensors into dir (created).
void write_model(const std::string& dir, const TinyModel& model);
void write_tiny_model(const std::string& dir, const TinyModelSpec& spec);

// A fresh temporary directory under $TMPDIR, removed by the caller if wanted.
std::string make_temp_dir(const std::string& tag);

// max|a - b| / max|b|: how far logits `a` are from `b`, relative to b's scale.
double relative_error(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace qmlx::testing
