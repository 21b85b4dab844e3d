// The compute shaders' SPIR-V, compiled from shaders/*.comp by glslc at build time and embedded
// in the binary (the generated embedded_shaders.cpp), so no shader compiler runs at run time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace qmlx::vulkan {

struct EmbeddedShader {
  std::string_view name;  // the .comp file's name without the extension
  std::span<const uint32_t> spirv;
};

std::span<const EmbeddedShader> embedded_shaders();

// nullptr when no shader has that name.
const EmbeddedShader* find_embedded_shader(std::string_view name);

}  // namespace qmlx::vulkan
