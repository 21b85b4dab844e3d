// Restore guard: before a restore, the exact bytes it will add to the process (the K/V rows
// and recurrent state installed into the Session, the logits, and the bounded buffers the
// restore reads files into) are compared with the memory available to the process
// (cgroup-aware) less a margin. The estimate follows from shapes alone, so it is exact enough
// to leave the guard on: a restore that would push the machine into swap is refused instead.
#pragma once

#include <cstdint>

#include "engine/session_state.h"

namespace qmlx {

struct RestoreEstimate {
  uint64_t state_bytes = 0;        // what the Session holds afterwards
  uint64_t read_buffer_bytes = 0;  // file buffers alive at the same time during the restore

  uint64_t total() const { return state_bytes + read_buffer_bytes; }
};

// A restore of `position` tokens; `from_snapshot` when a snapshot file (tail, states, logits)
// is read besides the chunks; `chunks_in_flight` = how many chunk files are buffered at once.
RestoreEstimate estimate_restore(const StateLayout& layout, int chunk_tokens, int64_t position,
                                 bool from_snapshot, int chunks_in_flight);

struct GuardDecision {
  bool allowed = true;
  uint64_t needed = 0;
  uint64_t available = 0;  // available memory less the margin
};

GuardDecision check_restore_guard(const RestoreEstimate& estimate, uint64_t available_bytes,
                                  uint64_t margin_bytes);

}  // namespace qmlx
