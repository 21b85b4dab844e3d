#include "server/scheduling/batch_memory.h"

#include <algorithm>

#include "base/error.h"

namespace qmlx {
namespace {

std::string mib(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

}  // namespace

DeviceStateMemory device_state_memory(uint64_t memory, uint64_t weights,
                                      const std::string& device) {
  const uint64_t reserve = std::min<uint64_t>(memory / 10, uint64_t(1) << 30);
  if (weights + reserve >= memory)
    throw Error("--device " + device + ": the weights take " + mib(weights) + " of its " +
                mib(memory) + ", which leaves nothing for sequence states beside the " +
                mib(reserve) + " the forward pass keeps for scratch");
  DeviceStateMemory d;
  d.bytes = memory - weights - reserve;
  d.note = device + "'s " + mib(memory) + " less " + mib(weights) + " of weights and " +
           mib(reserve) + " for the forward pass";
  return d;
}

BatchMemoryBudget batch_memory_budget(int64_t max_batch_memory_mb, int parallel,
                                      int64_t context_limit, uint64_t full_sequence_bytes,
                                      const DeviceStateMemory& device) {
  BatchMemoryBudget b;
  if (max_batch_memory_mb > 0) {
    b.bytes = uint64_t(max_batch_memory_mb) << 20;
    b.source = "--max-batch-memory";
  } else {
    b.bytes = uint64_t(parallel) * full_sequence_bytes;
    b.source = "--parallel " + std::to_string(parallel) + " x " + std::to_string(context_limit) +
               " tokens";
  }
  if (device.bytes > 0 && b.bytes > device.bytes) {
    b.bytes = device.bytes;
    b.source = device.note;
  }
  return b;
}

}  // namespace qmlx
