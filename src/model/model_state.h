// ModelState: what the forward pass carries from one call to the next for one sequence: K/V rows
// of every full-attention layer (position-major, in the chosen KvType) and the conv and SSM
// state of every Gated DeltaNet layer (fp32). The engine's Session owns one and exposes it to the
// cache; this layer only defines the storage.
#pragma once

#include <cstdint>
#include <vector>

#include "base/growable_bytes.h"
#include "kernels/kv_row.h"

namespace qmlx {

struct KvCache {
  // capacity rows * row_bytes; rows [0, position) are valid. Grown in place (no copy) and
  // resident only where written.
  GrowableBytes k, v;

  void ensure_rows(int64_t rows, size_t row_bytes);
};

struct RecurrentState {
  std::vector<float> conv;  // [K-1][conv_channels], oldest row first
  std::vector<float> ssm;   // [Hv][Dv][Dk]
};

struct ModelState {
  int64_t position = 0;
  KvType kv_type = KvType::kF32;
  size_t kv_row_bytes = 0;
  std::vector<KvCache> kv;                // one per full-attention layer, in layer order
  std::vector<RecurrentState> recurrent;  // one per Gated DeltaNet layer, in layer order
};

}  // namespace qmlx
