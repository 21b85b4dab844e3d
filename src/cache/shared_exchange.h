// Shared exchange: internal to PrefixCache. What moves between this server's tiers and the
// shared tier besides plain reads: a restore that read files from the shared tier hands them
// to the writer to be kept on local disk (adoption: the next restore of that prefix is local),
// and a committed checkpoint of this server's own is published for the fleet. A checkpoint
// that came from the shared tier is not published back.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "cache/cache_tiers.h"
#include "cache/capture.h"
#include "cache/writer.h"

namespace qmlx {

// Hands what a successful restore of `point` read from the shared tier (file name, bytes) to
// the writer, to be kept on local disk; nothing is adopted when a file does not decode.
void adopt_from_shared(CacheTiers& tiers, SnapshotWriter& writer, const ResumePoint& point,
                       const std::vector<std::pair<std::string, SharedBytes>>& files);

// Publishes a committed checkpoint to the shared tier (on the writer thread); a failure is
// counted as a dropped write and logged, never an error for the commit.
void publish_to_shared(CacheTiers& tiers, const PendingWrite& write, const SealedFile& snapshot);

}  // namespace qmlx
