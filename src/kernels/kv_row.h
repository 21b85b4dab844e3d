// KvType: how the K/V cache stores one KV head's row (one position, one head, D values), and the
// functions that write and read such a row. Plain rows are D values of f32, f16 or bf16. An int8
// row is D signed codes followed by one float32 scale, value = code * scale, quantized
// symmetrically per row and head: scale = max|x| / 127, code = round-to-nearest(x / scale).
// The scale is float32 (4 bytes per 256 values, 1.5% of the row) rather than bf16: a bf16 scale
// would add up to 0.4% relative error to the whole row, as much as the int8 step itself.
// A cache row of Nkv heads is Nkv such head rows back to back: one contiguous plain buffer.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qmlx {

enum class KvType : uint8_t { kF32 = 0, kF16 = 1, kBF16 = 2, kInt8 = 3 };

// Bytes of one head row of D values.
size_t kv_head_bytes(KvType t, int D);

// Writes x[0, D) as one head row at dst (kv_head_bytes(t, D) bytes).
void store_kv_head(const float* x, int D, KvType t, void* dst);

// The head row at src as D floats: src itself when t is f32, else decoded into buffer[0, D).
const float* load_kv_head(const void* src, int D, KvType t, float* buffer);

}  // namespace qmlx
