// Binding windows: a kernel addresses its data as elements from the start of each binding, and
// a binding must start at a multiple of the device's minStorageBufferOffsetAlignment and span
// at most maxStorageBufferRange bytes (128 MiB on lavapipe). A window binds the bytes an
// operation needs, its start rounded down to that alignment, and says how many elements lie
// between the binding's start and the data, for the kernel's push constants. Operations over
// larger data split into several dispatches, each with its own windows.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/vulkan/command_recorder.h"

namespace qmlx::vulkan {

struct Window {
  Binding binding;
  uint32_t base = 0;  // elements from the binding's start to byte `begin`
};

// Bytes [begin, end) of `buffer` (begin a multiple of element_bytes). Throws if the window is
// longer than the device allows; callers size their pieces with window_capacity().
Window window(const Context& context, const Buffer& buffer, size_t begin, size_t end,
              size_t element_bytes, Access access);

// The most bytes of data a window can promise to cover wherever it starts: the binding range
// less the alignment slack.
size_t window_capacity(const Context& context);

}  // namespace qmlx::vulkan
