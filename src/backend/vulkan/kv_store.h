// Appending K/V rows to a cache on the device (shaders/kv_store.comp): kernels/kv_row.h's
// store_kv_head for every head of `rows` rows, in the cache's KvType (f32, f16, bf16 rounded to
// nearest even, int8 codes with their float32 scale). The conversions are integer arithmetic
// and one division (int8's x / scale), so rows are bit-identical to the CPU's on devices with a
// correctly rounded division (lavapipe), and exactly so for f32, f16 and bf16 everywhere.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/vulkan/command_recorder.h"
#include "kernels/kv_row.h"

namespace qmlx::vulkan {

// src: `rows` rows of `heads` x D floats from float `src_offset` on; the rows go to cache rows
// [first_row, first_row + rows) (each heads x kv_head_bytes(kv_type, D) bytes). D a multiple of
// 4.
void record_kv_store(CommandRecorder& recorder, const Buffer& src, size_t src_offset, int rows,
                     int heads, int D, KvType kv_type, const Buffer& cache, int64_t first_row);

}  // namespace qmlx::vulkan
