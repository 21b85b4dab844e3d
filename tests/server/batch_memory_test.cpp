// The batch memory budget (server/scheduling/batch_memory.h): --max-batch-memory or --parallel
// full-context sequences, capped on a device by what its memory leaves for sequence states; and
// what one sequence counts against it (server/scheduling/scheduler.h).
#include "server/scheduling/batch_memory.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "server/scheduling/scheduler.h"

namespace qmlx {
namespace {

constexpr uint64_t kMiB = uint64_t(1) << 20;

TEST(BatchMemoryTest, TheCpuTakesTheFlagOrParallelFullSequences) {
  const BatchMemoryBudget flag = batch_memory_budget(4096, 8, 32768, 100 * kMiB, {});
  EXPECT_EQ(flag.bytes, 4096 * kMiB);
  EXPECT_EQ(flag.source, "--max-batch-memory");
  const BatchMemoryBudget slots = batch_memory_budget(0, 4, 32768, 100 * kMiB, {});
  EXPECT_EQ(slots.bytes, 400 * kMiB);
  EXPECT_EQ(slots.source, "--parallel 4 x 32768 tokens");
}

TEST(BatchMemoryTest, ADeviceLeavesItsMemoryLessTheWeightsAndAScratchReserve) {
  // 24 GiB card, 18 GiB of weights: 1 GiB reserve (a tenth would be 2.4 GiB), 5 GiB left.
  const DeviceStateMemory card = device_state_memory(24576 * kMiB, 18432 * kMiB, "vulkan:0");
  EXPECT_EQ(card.bytes, 5120 * kMiB);
  EXPECT_EQ(card.note,
            "vulkan:0's 24576 MiB less 18432 MiB of weights and 1024 MiB for the "
            "forward pass");
  // Small: a tenth.
  const DeviceStateMemory small = device_state_memory(1000 * kMiB, 100 * kMiB, "vulkan");
  EXPECT_EQ(small.bytes, 800 * kMiB);
  // Nothing left is an error at start, naming the sizes.
  try {
    device_state_memory(1000 * kMiB, 950 * kMiB, "vulkan:1");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the weights take 950 MiB of its 1000 MiB"),
              std::string::npos)
        << e.what();
  }
}

TEST(BatchMemoryTest, TheDeviceCapsEitherBudgetOnlyWhenSmaller) {
  const DeviceStateMemory card = device_state_memory(24576 * kMiB, 18432 * kMiB, "vulkan:0");
  const BatchMemoryBudget capped = batch_memory_budget(0, 16, 262144, 1024 * kMiB, card);
  EXPECT_EQ(capped.bytes, card.bytes);
  EXPECT_EQ(capped.source, card.note);
  const BatchMemoryBudget flag = batch_memory_budget(2048, 16, 262144, 1024 * kMiB, card);
  EXPECT_EQ(flag.bytes, 2048 * kMiB);  // the flag asks for less than the card has
  EXPECT_EQ(flag.source, "--max-batch-memory");
  const BatchMemoryBudget big_flag = batch_memory_budget(65536, 1, 4096, kMiB, card);
  EXPECT_EQ(big_flag.bytes, card.bytes);  // more than the card has: the card decides
}

// A sequence counts its K/V rows and recurrent state; with speculative decoding of k drafts also
// the MTP head's K/V rows (one attention layer) and the k + 1 recurrent states a verify call
// keeps for its rollback.
TEST(BatchMemoryTest, SpeculationCountsTheHeadsRowsAndTheKeptStates) {
  StateLayout l;
  l.attention_layers = {3, 7};
  l.recurrent_layers = {0, 1, 2, 4, 5, 6};
  l.kv_heads = 2;
  l.head_dim = 8;
  l.kv_dtype = DType::kF32;
  l.conv_rows = 3;
  l.conv_channels = 16;
  l.ssm_heads = 2;
  l.ssm_key_dim = 4;
  l.ssm_value_dim = 4;
  using server::sequence_state_bytes;
  const uint64_t plain = sequence_state_bytes(l, 100);
  EXPECT_EQ(plain, 100 * l.kv_bytes_per_token() + l.recurrent_bytes());
  EXPECT_EQ(sequence_state_bytes(l, 100, 0), plain);
  EXPECT_EQ(sequence_state_bytes(l, 100, 3) - plain,
            100 * 2 * l.kv_row_bytes() + 4 * l.recurrent_bytes());
}

}  // namespace
}  // namespace qmlx
