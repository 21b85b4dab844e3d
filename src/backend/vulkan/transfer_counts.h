// TransferCounts: the work that crossed between the host and a device since it was opened.
// The tests bound these per forward step (one submission; the read-backs the caller asked
// for; no staging allocated once warm), which is how they show the work runs on the device
// and is not waited on operation by operation. A plain struct, free of Vulkan types, so the
// model layer's DeviceForward can report it in builds without the backend.
#pragma once

#include <cstdint>

namespace qmlx::vulkan {

struct TransferCounts {
  uint64_t submissions = 0;          // queue submissions, each waited on
  uint64_t dispatches = 0;           // compute dispatches in them
  uint64_t host_writes = 0;          // uploads from host memory, however made
  uint64_t host_reads = 0;           // read-backs into host memory
  uint64_t staging_allocations = 0;  // host-visible staging buffers allocated (not reused)
  // Where a step's host time goes: recording its commands (from a recorder's start to its
  // submission) and waiting for them to run. On a GPU the first is pure overhead the device
  // waits through, the profile to read before optimising either.
  uint64_t record_ns = 0;
  uint64_t wait_ns = 0;
};

}  // namespace qmlx::vulkan
