// Rearranging a stored tensor's axes: numpy's transpose on raw elements. Checkpoint layouts
// disagree on axis order where a weight is a convolution (MLX stores channels last, PyTorch
// channels first; llama.cpp splits a Conv3d along time), and the engine wants one order; a
// loader undoes the difference once, at load, with this.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace qmlx {

// The elements of a row-major tensor of `shape` (`elem_bytes` each, copied as bytes, so any
// scalar type keeps its exact bits) in the order of `shape` permuted by `axes`: axis i of the
// result is axis axes[i] of the source.
std::vector<uint8_t> transposed_elements(const uint8_t* data, size_t elem_bytes,
                                         const std::vector<int64_t>& shape,
                                         const std::vector<int>& axes);

}  // namespace qmlx
