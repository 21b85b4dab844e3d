#include "host_matrix.h"

#include <random>

#include "../kernels/gguf_block_samples.h"
#include "vulkan_fixture.h"

namespace qmlx::vulkan::testing {

std::vector<uint8_t> encode(const std::vector<float>& v, ScalarType t) {
  std::vector<uint8_t> out(v.size() * scalar_size(t));
  convert_from_float(v.data(), v.size(), t, out.data());
  return out;
}

HostMatrix float_matrix(WeightFormat format, int rows, int cols, uint64_t seed, float scale) {
  HostMatrix m;
  const ScalarType t = format == WeightFormat::kF32   ? ScalarType::kF32
                       : format == WeightFormat::kF16 ? ScalarType::kF16
                                                      : ScalarType::kBF16;
  m.data = encode(random_floats(size_t(rows) * cols, seed, -0.5f * scale, 0.5f * scale), t);
  m.w.format = format;
  m.w.rows = rows;
  m.w.cols = cols;
  m.w.data = m.data.data();
  return m;
}

HostMatrix affine_matrix(int bits, int group_size, ScalarType scale_type, int rows, int cols,
                         uint64_t seed, float scale) {
  HostMatrix m;
  std::mt19937_64 rng(seed);
  m.data.resize(size_t(rows) * cols * bits / 8);
  for (uint8_t& b : m.data) b = uint8_t(rng());  // any bytes are valid codes
  const size_t groups = size_t(rows) * (cols / group_size);
  m.scales = encode(random_floats(groups, seed + 1, 0.001f * scale, 0.02f * scale), scale_type);
  m.biases = encode(random_floats(groups, seed + 2, -0.1f * scale, 0.1f * scale), scale_type);
  m.w.format = WeightFormat::kAffine;
  m.w.rows = rows;
  m.w.cols = cols;
  m.w.bits = bits;
  m.w.group_size = group_size;
  m.w.scale_type = scale_type;
  m.w.data = m.data.data();
  m.w.scales = m.scales.data();
  m.w.biases = m.biases.data();
  return m;
}

HostMatrix gguf_matrix(GgufType type, int rows, int cols, uint64_t seed) {
  HostMatrix m;
  m.data = qmlx::testing::random_gguf_blocks(type, size_t(rows) * cols, seed);
  m.w.format = WeightFormat::kGguf;
  m.w.gguf_type = type;
  m.w.rows = rows;
  m.w.cols = cols;
  m.w.data = m.data.data();
  return m;
}

}  // namespace qmlx::vulkan::testing
