// Floats stored as f32, f16 or bf16 (kernels/scalar_type.h's ScalarType 0, 1, 2) in a uint32
// array: element i is word i (f32) or the low (i even) or high (i odd) half of word i / 2. The
// 16-bit kinds are widened by hand: bf16 is the top half of an f32, and devices such as
// lavapipe have no bf16 type. Both widenings are exact, as the CPU's convert_to_float.
#ifndef QMLX_SCALAR_LOAD_GLSL
#define QMLX_SCALAR_LOAD_GLSL

// The word that holds element i.
uint scalar_word(uint i, uint type) { return type == 0u ? i : i >> 1; }

// Element i as a float, given scalar_word(i, type)'s contents.
float widen_scalar(uint word, uint i, uint type) {
  if (type == 0u) return uintBitsToFloat(word);
  const uint bits = (i & 1u) != 0u ? word >> 16 : word & 0xffffu;
  if (type == 1u) return unpackHalf2x16(bits).x;
  return uintBitsToFloat(bits << 16);
}

#endif
