// Causal GQA attention on the device (shaders/attention.comp): the counterpart of
// kernels/attention.h. R query rows, each at its own absolute position P, attend over rows
// [0, P] of a K/V cache stored as kernels/kv_row.h stores it (f32, f16, bf16, or int8 codes
// with a float scale per head row); query head h reads KV head h / (Nh / Nkv). Each row is
// computed in the arithmetic the CPU uses for its kind (generated rows: the decode kernel;
// prompt rows: the block kernel with an online softmax), so a row's result does not depend on
// the other rows of the call, and every reduction has a fixed order (no atomics).
//
// Exactness (on devices with a correctly rounded fma and division, lavapipe): the shader
// repeats the CPU's sums and its simd::exp step for step; what it cannot repeat is std::exp,
// which the CPU calls for a generated row's last (P + 1) % 8 scores and for a prompt row's
// rescaling when its running maximum grows after the first block of 64 keys. Rows free of
// those (generated rows with (P + 1) % 8 == 0, prompt rows at P < 64 or whose largest score
// comes first) are bit-identical; the others differ by rounding (attention_test.cpp bounds it).
#pragma once

#include <cstddef>

#include "backend/vulkan/command_recorder.h"
#include "kernels/kv_row.h"

namespace qmlx::vulkan {

struct DeviceAttentionShape {
  int R = 0, Nh = 0, Nkv = 0, D = 0;  // D a multiple of 16, at most 512
  int kv_rows = 0;                    // rows the caches hold; every position is below it
  float scale = 1.f;                  // usually 1/sqrt(D)
  bool generated = false;             // the rows are generated rows (decode steps)
};

// Bytes of the scratch buffer generated rows need (their scores): R * Nh * kv_rows floats.
size_t attention_scratch_bytes(const DeviceAttentionShape& s);

// q: [R][Nh][D] floats; positions: R int32; k_cache, v_cache: [kv_rows][Nkv] head rows of
// kv_type; out: [R][Nh][D] floats. scratch: attention_scratch_bytes(s) bytes for generated
// rows, unused (may be null) for prompt rows. All from offset 0; each cache must fit one
// binding (128 MiB on lavapipe; throws qmlx::Error otherwise).
void record_attention(CommandRecorder& recorder, const DeviceAttentionShape& s, const Buffer& q,
                      const Buffer& positions, const Buffer& k_cache, const Buffer& v_cache,
                      KvType kv_type, const Buffer& out, const Buffer* scratch);

}  // namespace qmlx::vulkan
