#include "engine/image_pad_keys.h"

#include <algorithm>

#include <xxhash.h>

namespace qmlx {

void write_image_pad_keys(uint64_t identity_low, uint64_t identity_high, std::span<int32_t> pads) {
  for (size_t k = 0; k < pads.size(); ++k) {
    const uint64_t words[3] = {identity_low, identity_high, uint64_t(k)};
    const uint64_t h = XXH3_64bits(words, sizeof(words));
    // 31 bits of the hash, never 0: every key is in [INT32_MIN + 1, -1].
    pads[k] = -int32_t(1 + (h % 0x7fffffffu));
  }
}

bool map_image_pad_keys(std::span<const int32_t> tokens, int32_t image_pad_id,
                        std::vector<int32_t>* out) {
  out->clear();
  if (std::none_of(tokens.begin(), tokens.end(), is_image_pad_key)) return false;
  out->assign(tokens.begin(), tokens.end());
  for (int32_t& id : *out) {
    if (is_image_pad_key(id)) id = image_pad_id;
  }
  return true;
}

}  // namespace qmlx
