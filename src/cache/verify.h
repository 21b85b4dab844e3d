// Offline verification of one stored snapshot and every chunk it names, without the model:
// checksums, the fingerprint of the store, the snapshot's id and chunk list recomputed from
// its own token blob, and each chunk's tokens against the matching slice of that blob. Used by
// `qmlx cache verify` and the admin API; restores do the same checks against the prompt.
#pragma once

#include <cstdint>
#include <string>

#include "cache/disk_store.h"
#include "cache/restorer.h"

namespace qmlx {

struct VerifyReport {
  Hash128 id;
  bool ok = false;
  RejectReason reason = RejectReason::kNone;
  std::string detail;
  std::string bad_file;  // store name of the file at fault
  uint64_t bytes_checked = 0;
};

VerifyReport verify_stored_snapshot(DiskStore& store, const Hash128& id,
                                    const Hash128& fingerprint);

}  // namespace qmlx
