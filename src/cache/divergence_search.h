// Divergence search: internal to PrefixCache. Finds what explain.h reports for a prompt: among
// the indexed snapshots, the few that share the most leading chunks with it (most recently used
// first among equals) and reach past what was restored, their token blobs read from the RAM
// tier or the disk, and the deepest split find_divergence() reports on them. Reading is bounded
// (a few token blobs), so it runs on every request.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "cache/cache_tiers.h"
#include "cache/explain.h"

namespace qmlx {

// The divergence between the prompt and the nearest cached prefix when it shares at least
// min_shared tokens more than `restored`, or agrees again after a few replaced tokens.
std::optional<Divergence> find_nearest_divergence(CacheTiers& tiers,
                                                  std::span<const int32_t> prompt, int64_t restored,
                                                  int64_t min_shared);

}  // namespace qmlx
