#include "image/image_identity.h"

#include <xxhash.h>

#include <cstring>

namespace qmlx::image {
namespace {

// Bumped if what the identity covers ever changes, so old cache keys stop matching.
constexpr char kIdentityTag[] = "qmlx-image-identity-v1";

void add_u32(XXH3_state_t* state, uint32_t v) {
  const uint8_t le[4] = {uint8_t(v), uint8_t(v >> 8), uint8_t(v >> 16), uint8_t(v >> 24)};
  XXH3_128bits_update(state, le, sizeof le);
}

}  // namespace

ImageIdentity image_identity(const RgbImage& decoded, const ResizedSize& resized) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_128bits_reset(state);
  XXH3_128bits_update(state, kIdentityTag, sizeof kIdentityTag - 1);
  add_u32(state, uint32_t(decoded.width));
  add_u32(state, uint32_t(decoded.height));
  XXH3_128bits_update(state, decoded.pixels.data(), decoded.pixels.size());
  add_u32(state, uint32_t(resized.width));
  add_u32(state, uint32_t(resized.height));
  const XXH128_hash_t digest = XXH3_128bits_digest(state);
  XXH3_freeState(state);
  return {digest.low64, digest.high64};
}

}  // namespace qmlx::image
