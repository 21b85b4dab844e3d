// How much sequence state (K/V rows and recurrent state) the scheduler admits at once: the batch
// memory budget. On the CPU it is --max-batch-memory, or --parallel full-context sequences. On a
// device the states live in device memory, so the budget is never more than what the device
// has left once the weights are in and the forward pass has its scratch: a request that could
// not fit there waits, or is a 503 that names the device, instead of failing the device
// allocation mid-step.
#pragma once

#include <cstdint>
#include <string>

namespace qmlx {

// The device memory the sequences' states may take: `memory` (what qmlx plans with on the
// device) less `weights` and a reserve for the forward pass's scratch (a tenth of the memory,
// at most 1 GiB), and a note saying so for the start-up line and 503s. Throws qmlx::Error when
// nothing is left.
struct DeviceStateMemory {
  uint64_t bytes = 0;
  std::string note;
};
DeviceStateMemory device_state_memory(uint64_t memory, uint64_t weights, const std::string& device);

struct BatchMemoryBudget {
  uint64_t bytes = 0;
  std::string source;  // "--max-batch-memory", "--parallel 4 x 32768 tokens" or the device's note
};

// max_batch_memory_mb: --max-batch-memory (0: not given); full_sequence_bytes: one sequence at
// the context limit; device: DeviceStateMemory's bytes (0: the model is on the CPU).
BatchMemoryBudget batch_memory_budget(int64_t max_batch_memory_mb, int parallel,
                                      int64_t context_limit, uint64_t full_sequence_bytes,
                                      const DeviceStateMemory& device);

}  // namespace qmlx
