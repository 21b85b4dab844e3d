// One code of an MLX affine row (kernels/weight_matrix.h): the row is an LSB-first stream of
// BITS-bit codes in uint32 words, so code c starts at bit c * BITS of the row and, for 3, 5 and
// 6 bits, may run on into the next word. The including shader defines AFFINE_WORDS as the
// uint array the codes live in, and the constant BITS.
const uint AFFINE_MASK = (1u << BITS) - 1u;

// Words of a row of `cols` codes (cols a multiple of 32, or of 32 / BITS for 2, 4 and 8 bits).
uint affine_row_words(uint cols) { return cols * BITS / 32u; }

// Code c of the row whose first word is AFFINE_WORDS[row_word].
uint affine_code(uint row_word, uint c) {
  const uint bit = c * BITS;
  const uint word = row_word + (bit >> 5u), shift = bit & 31u;
  uint v = AFFINE_WORDS[word] >> shift;
  if (shift + BITS > 32u) v |= AFFINE_WORDS[word + 1u] << (32u - shift);
  return v & AFFINE_MASK;
}
