// Restorer: reads one resume point's files (the snapshot and every chunk below it), verifies
// each (checksums, fingerprint, shapes, and the stored tokens against the prompt byte for
// byte), and installs them into a StateSink. Chunks are fetched and verified in parallel
// batches and installed in order, so at most one batch of chunk files is buffered. A failed
// check leaves the sink reset to empty and names the reason and the file at fault, so the
// caller can quarantine it and try the next candidate: nothing partially restored is used.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "base/status.h"
#include "cache/index.h"
#include "cache/memory_tier.h"
#include "engine/session_state.h"

namespace qmlx {

// kPartial: a file of the resume point is gone (evicted from a tier since it was indexed).
enum class RejectReason { kNone, kChecksum, kTokens, kFingerprint, kGuard, kIo, kFormat, kPartial };
const char* reject_reason_name(RejectReason reason);

struct FetchedFile {
  Status status;
  SharedBytes bytes;
  bool from_memory = false;
  bool from_shared = false;
};
// Returns the bytes of a store file by its DiskStore name (RAM tier, then disk, then shared).
using FileFetcher = std::function<FetchedFile(const std::string& name)>;

struct RestoreRequest {
  ResumePoint point;
  std::span<const int32_t> prompt;
  Hash128 fingerprint;
  int chunk_tokens = 256;
  bool compare_tokens = true;  // token_blob_checksum: compare stored tokens with the prompt
  int chunks_in_flight = 1;
};

struct RestoreOutcome {
  bool ok = false;
  RejectReason reason = RejectReason::kNone;
  std::string detail;
  std::string bad_file;  // the store name of the file that failed verification, if any
  uint64_t bytes_read = 0;
  bool all_from_memory = true;
  bool any_from_shared = false;
  // A failed attempt that had already reset the sink: whatever it held before is gone.
  bool sink_cleared = false;
  double read_seconds = 0;
  double verify_seconds = 0;
  double install_seconds = 0;
};

RestoreOutcome restore_point(const RestoreRequest& request, const FileFetcher& fetch,
                             StateSink& sink);

}  // namespace qmlx
