// GGUF quantizer: encodes float rows into ggml's tensor types (f32/f16/bf16 and the block
// formats Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K) byte for byte in the
// layout llama.cpp reads (ggml-common.h). Rounding follows ggml's reference quantizers for the
// 32-value formats; the K-quants use their min/max (or max-magnitude) scale rules without
// ggml's iterative scale search, which changes the quality of a quantization, not how any
// reader decodes it. Part of the generator: shares no code with the engine's reader.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace qmlx::modelgen {

// ggml's `enum ggml_type` ids.
enum class GgufQuant : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kBF16 = 30,
};

// "q4_k" -> kQ4_K (case-insensitive); nullopt for names this generator cannot write.
std::optional<GgufQuant> parse_gguf_quant(const std::string& name);
const char* gguf_quant_name(GgufQuant type);
int gguf_quant_block_elems(GgufQuant type);
size_t gguf_quant_block_bytes(GgufQuant type);
// Bytes of `n` values (n a multiple of the block size).
size_t gguf_quant_bytes(GgufQuant type, size_t n);

// Encodes n values (n a multiple of the block size).
std::vector<uint8_t> gguf_quantize(GgufQuant type, const float* values, size_t n);

}  // namespace qmlx::modelgen
