// Image pads as the prompt cache sees them. A prompt's token ids carry, in place of each of an
// image's pad tokens, a negative key derived from the image's identity (a 128-bit hash of its
// pixels and resize) and the pad's index within the image. The cache's chain hashes, token blobs
// and restore checks then tell two images apart, and find the same screenshot sent again, without
// the cache knowing what an image is (architecture.md: the cache knows no model). The session
// maps every key back to the model's image pad token before the model sees it, and the sampler
// and grammar never see prompt keys as tokens.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace qmlx {

constexpr bool is_image_pad_key(int32_t id) { return id < 0; }

// Writes the keys of an image's pads (pads.size() of them) from its identity.
void write_image_pad_keys(uint64_t identity_low, uint64_t identity_high, std::span<int32_t> pads);

// `tokens` with every image pad key replaced by `image_pad_id` (a copy only where one is needed:
// returns false and leaves `out` empty when there is no key).
bool map_image_pad_keys(std::span<const int32_t> tokens, int32_t image_pad_id,
                        std::vector<int32_t>* out);

}  // namespace qmlx
