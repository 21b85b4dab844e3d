// ModelState: what the forward pass carries from one call to the next for one sequence: K/V rows
// of every full-attention layer (position-major, in the chosen KvType) and the conv and SSM
// state of every Gated DeltaNet layer (fp32). The engine's Session owns one and exposes it to the
// cache; this layer only defines the storage.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/growable_bytes.h"
#include "kernels/kv_row.h"

namespace qmlx {

class DeviceSequence;

struct KvCache {
  // capacity rows * row_bytes; rows [0, position) are valid. Grown in place (no copy) and
  // resident only where written.
  GrowableBytes k, v;

  void ensure_rows(int64_t rows, size_t row_bytes);
};

// The state of a Gated DeltaNet layer after each token of one forward call, for a caller that
// may roll back to any of them (speculative decoding): token t's conv state at conv + t * (K-1) *
// conv_channels, its SSM state at ssm + t * Hv * Dv * Dk.
struct RecurrentHistory {
  std::vector<float> conv, ssm;
};

struct RecurrentState {
  std::vector<float> conv;  // [K-1][conv_channels], oldest row first
  std::vector<float> ssm;   // [Hv][Dv][Dk]
  // When set, the layer also writes here its state after each token it is fed (resized to the
  // call's T tokens). Not owned.
  RecurrentHistory* history = nullptr;
};

struct ModelState {
  int64_t position = 0;
  // The M-RoPE shift of the text rows from `position` on: text row r is at position
  // r + rope_delta on all three sections (model/sequence_image.h). 0 until an image ends.
  int64_t rope_delta = 0;
  KvType kv_type = KvType::kF32;
  size_t kv_row_bytes = 0;
  std::vector<KvCache> kv;                // one per full-attention layer, in layer order
  std::vector<RecurrentState> recurrent;  // one per Gated DeltaNet layer, in layer order
  // Set when the model runs on a device (model/device_forward.h): the K/V rows and recurrent
  // state are there, and kv and recurrent above only count the layers (their arrays stay
  // empty). Copies of the state share it.
  std::shared_ptr<DeviceSequence> device;
};

}  // namespace qmlx
