// The model's weights in device memory, uploaded once at load: every matrix in its stored format
// (backend/vulkan/matmul.h), every norm and small vector as floats, laid out for the device
// forward pass (vulkan_forward.cpp). One change of layout: a gated attention layer's q_proj,
// whose rows are [q_h | gate_h] per head, is uploaded as two matrices (the q rows, the gate
// rows), so each projection's output is contiguous for the per-head norm and the gate. And a MoE
// block's routed experts are stacked per projection (backend/vulkan/matmul_by_expert.h), so the
// expert the router picks on the device can be addressed there. Or, for the layers --cpu-moe /
// --n-cpu-moe name, not uploaded at all: those experts stay in host memory and run on the CPU.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backend/vulkan/matmul.h"
#include "backend/vulkan/matmul_by_expert.h"
#include "model/config.h"
#include "model/device_forward.h"
#include "model/weights.h"

namespace qmlx::vulkan {

struct DeviceAttention {
  DeviceMatrix q, gate, k, v, o;  // gate only when gated
  Buffer q_norm, k_norm;
};

struct DeviceDeltaNet {
  DeviceMatrix qkv, z, b, a, out;
  Buffer conv, dt_bias, A, norm;
  // int32 [Hv]: out_proj's input head i is value head out_heads[i] (llama.cpp's tiled order,
  // DeltaNetWeights::out_heads), the activations moved to it by gather_heads.h; empty (size 0)
  // for the identity.
  Buffer out_heads;
};

struct DeviceMlp {
  DeviceMatrix gate, up, down;
};

struct DeviceMoe {
  DeviceMatrix router;           // [E, H]
  DeviceExperts gate, up, down;  // E stacked matrices each; empty when `host` is set
  // The routed experts in host memory (the model's own weights, which outlive the device
  // forward pass), run by the CPU kernels; null when they are on the device.
  const MoeWeights* host = nullptr;
  bool has_shared_expert = false;
  DeviceMlp shared;
  DeviceMatrix shared_gate;  // [1, H]
};

struct DeviceLayer {
  bool full_attention = true;
  bool moe = false;  // the feed-forward block: moe_ffn when set, else mlp
  Buffer input_norm, post_norm;
  DeviceAttention attention;
  DeviceDeltaNet delta_net;
  DeviceMlp mlp;
  DeviceMoe moe_ffn;
};

// The MTP head (model/mtp_head.cpp): fc's two halves of columns as two matrices (the embedding's
// and the hidden state's), so its two normed inputs need not be joined into one row.
struct DeviceMtp {
  DeviceMatrix fc_embedding, fc_hidden;  // [H, H] each
  Buffer embedding_norm, hidden_norm, final_norm;
  DeviceLayer layer;
};

struct DeviceWeights {
  DeviceMatrix embed;
  DeviceMatrix head;  // empty when tied: the head is `embed`
  bool tied = false;
  Buffer final_norm;
  std::vector<DeviceLayer> layers;
  std::optional<DeviceMtp> mtp;  // when the model has an MTP head the device can run
  std::string mtp_unavailable;   // why a head the model has is not on the device
  size_t bytes = 0;              // device memory of all of the above
  HostExperts host_experts;      // the routed experts left in host memory

  const DeviceMatrix& lm_head() const { return tied ? embed : head; }
};

// Throws qmlx::Error naming the first tensor the device cannot run (its format, or a layer kind
// not on the device yet), before uploading anything. An MTP head the device cannot run is left
// out instead (mtp_unavailable says why): it is optional. `progress` hears bytes uploaded of all.
// The routed experts of layers [0, cpu_moe_layers) stay in host memory (any format the CPU
// reads); the MTP head's are uploaded whatever cpu_moe_layers says.
DeviceWeights upload_weights(Context& context, const ModelConfig& config,
                             const ModelWeights& weights, int cpu_moe_layers,
                             const std::function<void(uint64_t, uint64_t)>& progress);

}  // namespace qmlx::vulkan
