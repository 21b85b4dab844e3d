#include "kernels/int16_activations.h"

#include <algorithm>
#include <cmath>

namespace qmlx {

Int16Activations quantize_int16_activations(const float* x, int cols, int group_size,
                                            bool nibble_order) {
  constexpr int kChunk = 32;  // columns whose nibbles one 16-byte load of 4-bit codes holds
  Int16Activations a;
  a.group_size = group_size;
  a.nibble_order = nibble_order;
  const int groups = cols / group_size;
  a.codes.resize(cols);
  a.steps.resize(groups);
  a.sums.resize(groups);
  for (int g = 0; g < groups; ++g) {
    const float* xg = x + size_t(g) * group_size;
    float amax = 0.f;
    for (int i = 0; i < group_size; ++i) amax = std::max(amax, std::fabs(xg[i]));
    const float step = amax / 32767.f, inv = amax > 0.f ? 32767.f / amax : 0.f;
    int16_t* out = a.codes.data() + size_t(g) * group_size;
    int64_t sum = 0;
    for (int i = 0; i < group_size; ++i) {
      const int slot =
          nibble_order ? (i / kChunk) * kChunk + (i % 2) * (kChunk / 2) + (i % kChunk) / 2 : i;
      out[slot] = int16_t(std::lrint(xg[i] * inv));
      sum += out[slot];
    }
    a.steps[g] = step;
    a.sums[g] = step * float(sum);
  }
  return a;
}

}  // namespace qmlx
