// One sequence's state in device memory: the K/V rows of each full-attention layer (in the
// state's KvType, kernels/kv_row.h's layout, `capacity` rows each) and the conv and SSM state of
// each Gated DeltaNet layer (floats, ModelState's layouts), and those states after each row of
// a verify call. It keeps its Context alive, so its buffers are always released before the
// device.
#pragma once

#include <memory>
#include <vector>

#include "backend/vulkan/command_recorder.h"
#include "backend/vulkan/context.h"
#include "model/device_forward.h"

namespace qmlx::vulkan {

class VulkanSequence : public DeviceSequence {
 public:
  struct Rows {
    Buffer k, v;
  };
  struct Recurrent {
    Buffer conv, ssm;
  };

  std::shared_ptr<Context> context;
  KvType kv_type = KvType::kF32;
  size_t row_bytes = 0;  // one position's K (or V) row: Nkv head rows
  int64_t capacity = 0;  // rows each K/V buffer holds
  std::vector<Rows> kv;  // per full-attention layer
  std::vector<Recurrent> recurrent;
  // The recurrent states after each row of the last forward call that kept them (a verify call,
  // DeviceForward::restore_recurrent_row): per recurrent layer, `history_rows` conv states one
  // after another and as many SSM states. Allocated by the first such call, grown by a longer one.
  std::vector<Recurrent> history;
  int history_rows = 0;

  // Makes every K/V buffer hold at least `rows` rows, keeping rows [0, keep): new buffers are
  // recorded to be filled by `recorder`; the old ones go to `retired`, to be released once it
  // has run. Throws when a layer's rows would not fit one binding of the device.
  void reserve(int64_t rows, int64_t keep, CommandRecorder& recorder, std::vector<Buffer>& retired);
};

}  // namespace qmlx::vulkan
