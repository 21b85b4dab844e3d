// The gated delta rule of Gated DeltaNet on the device (shaders/gated_delta.comp): the token
// recurrence of kernels/gated_delta.h (gated_delta_recurrent), state [Hv][Dv][Dk] in and out,
// value head h reading key head h / (Hv / Hk). Each state row runs through the tokens in the
// CPU's order of operations (its sums lane for lane), so it is bit-identical to the CPU on
// devices with a correctly rounded fma (lavapipe), for Dk a multiple of 8 (128 in every
// model), whenever exp(g) is: the CPU takes it from
// std::exp and the device from its exp(), which agree exactly at g = 0 and within a few ulp
// elsewhere; the difference then carries through the state (gated_delta_test.cpp bounds it).
#pragma once

#include <cstddef>

#include "backend/vulkan/command_recorder.h"

namespace qmlx::vulkan {

struct DeviceGatedDeltaInputs {
  int T = 0, Hk = 0, Hv = 0, Dk = 0, Dv = 0;
  // In `qkv`: token t's q heads ([Hk][Dk]) at float q_offset + t * row_stride, its k heads at
  // k_offset + ..., its v heads ([Hv][Dv]) at v_offset + ... (the layer's conv output: 0, KD,
  // 2 KD, stride CD). q already L2-normalised and scaled, k L2-normalised.
  size_t q_offset = 0, k_offset = 0, v_offset = 0, row_stride = 0;
};

// g, beta: [T][Hv]; state: [Hv][Dv][Dk], updated; out: [T][Hv][Dv]. All from offset 0.
// `history`, when set, receives the state after each token ([T][Hv][Dv][Dk]): what speculative
// decoding rolls back to. Keeping it changes no other output by a bit.
void record_gated_delta(CommandRecorder& recorder, const DeviceGatedDeltaInputs& in,
                        const Buffer& qkv, const Buffer& g, const Buffer& beta, const Buffer& state,
                        const Buffer& out, const Buffer* history = nullptr);

}  // namespace qmlx::vulkan
