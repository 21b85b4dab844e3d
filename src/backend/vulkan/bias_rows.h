// A bias row added to every row on the device (shaders/bias_rows.comp): y[r] += bias, the bias
// of a Linear layer after record_matmul, as kernels/biased_matmul.h adds it after its matmul
// (one float addition each: bit-identical everywhere).
#pragma once

#include "backend/vulkan/command_recorder.h"

namespace qmlx::vulkan {

// y: [rows][n] floats from offset 0, bias: n floats.
void record_bias_rows(CommandRecorder& recorder, const Buffer& y, const Buffer& bias, int rows,
                      int n);

}  // namespace qmlx::vulkan
