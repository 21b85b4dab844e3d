// Per-architecture weight mapping: each function reads one family's checkpoint (either layout)
// into ModelWeights. The forward pass itself is shared (decoder.h); what differs between the
// families is how their tensors are named and arranged, and that lives in one file each.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "model/config.h"
#include "model/safetensors.h"
#include "model/weight_loader.h"
#include "model/weights.h"

namespace qmlx {

ModelWeights load_qwen3_5_weights(const TensorStore& store, const ModelConfig& config);
ModelWeights load_qwen3_next_weights(const TensorStore& store, const ModelConfig& config);
ModelWeights load_qwen3_weights(const TensorStore& store, const ModelConfig& config);

// The hybrid (Qwen3.5 / Qwen3-Next) layer stack; `load_projections` fills the Gated DeltaNet
// input projections (qkv, z, b, a) of one layer.
using DeltaNetProjections = std::function<void(WeightLoader&, int layer, DeltaNetWeights&)>;
ModelWeights load_hybrid_weights(const TensorStore& store, const ModelConfig& config,
                                 const DeltaNetProjections& load_projections);
// One hybrid decoder layer, `layers.<layer>.*` under the loader's root.
LayerWeights load_hybrid_layer(WeightLoader& w, int layer, bool full_attention, bool moe,
                               const DeltaNetProjections& load_projections);
// The MTP head (`mtp.*`, mtp_weights.cpp) when the checkpoint carries a whole one. One that is
// incomplete or malformed is dropped with one warning, and `dropped` says why.
std::optional<MtpWeights> load_mtp_weights(const WeightLoader& w,
                                           const DeltaNetProjections& load_projections,
                                           std::string& dropped);

}  // namespace qmlx
