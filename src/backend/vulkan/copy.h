// Copying device memory with a compute shader (shaders/copy.comp), and a measurement of the
// device's memory bandwidth with it: the ceiling every memory-bound kernel (the decode GEMVs)
// is judged against in later benchmarks.
#pragma once

#include <cstddef>

#include "backend/vulkan/command_recorder.h"

namespace qmlx::vulkan {

// dst[dst_offset, +bytes) = src[src_offset, +bytes); offsets and bytes multiples of 16.
void record_copy(CommandRecorder& recorder, const Buffer& src, size_t src_offset, const Buffer& dst,
                 size_t dst_offset, size_t bytes);

struct Bandwidth {
  double seconds = 0;           // for all repetitions, one submission
  double bytes_per_second = 0;  // bytes read plus bytes written, per second
};

// Copies `bytes` between two fresh buffers `repetitions` times in one submission.
Bandwidth measure_copy_bandwidth(Context& context, size_t bytes, int repetitions);

}  // namespace qmlx::vulkan
