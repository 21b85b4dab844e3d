// Unmasked multi-head attention on the device (shaders/bidirectional_attention.comp): the
// Vulkan counterpart of kernels/bidirectional_attention.h (the vision tower's attention of
// every patch over all patches of its frame). Deterministic (fixed summation orders, no
// atomics), but not the CPU's order: the two agree to rounding, not bit for bit.
#pragma once

#include <cstddef>
#include <string>

#include "backend/vulkan/command_recorder.h"

namespace qmlx::vulkan {

// Where q, k and v rows of one frame live: head h of row t at
// buffer[offset + t * stride + h * D] (floats). q, k and v may be one buffer (a fused [q | k | v]
// projection: offsets 0, heads * D, 2 * heads * D and stride 3 * heads * D).
struct AttentionRows {
  const Buffer* buffer = nullptr;
  size_t offset = 0;  // floats
  size_t stride = 0;  // floats
};

struct BidirectionalShape {
  int T = 0, heads = 0, D = 0;
  float scale = 1.f;
};

// The bytes one frame's rows of `r` span: what must fit one binding.
size_t attention_rows_bytes(const AttentionRows& r, const BidirectionalShape& s);

// True when the device runs this shape: D <= 128 and each of q, k, v and out fits one binding
// (window_capacity); otherwise *why says what is too large.
bool bidirectional_attention_fits(const Context& context, const BidirectionalShape& s,
                                  const AttentionRows& q, const AttentionRows& k,
                                  const AttentionRows& v, const AttentionRows& out,
                                  std::string* why);

// out row t, head h = softmax(scale * q_t,h . k_j,h over j < T) . v_j,h. Throws qmlx::Error when
// bidirectional_attention_fits says no.
void record_bidirectional_attention(CommandRecorder& recorder, const BidirectionalShape& s,
                                    const AttentionRows& q, const AttentionRows& k,
                                    const AttentionRows& v, const AttentionRows& out);

}  // namespace qmlx::vulkan
