// Causal scaled-dot-product attention of T query rows over a K/V cache, with grouped-query
// heads (query head h reads K/V head h / (Nh / Nkv)). The cache is position-major: row p holds
// Nkv head rows of type kv_type (kernels/kv_row.h; int8 rows are decoded on the fly, a few rows
// at a time, never as a copy of the cache). Query row t sits at position q_pos0 + t and sees
// rows [0, q_pos0 + t]. Softmax in fp32. (row, KV head) pairs are spread over default_pool().
//
// As in kernels/matmul.h, a call's rows are all prompt rows (block attention with an online
// softmax over key blocks aligned at position 0) or all generated rows (the decode kernel, one
// row at a time); each kind has one arithmetic whatever T is, so a row's output does not depend
// on how many rows share the call.
#pragma once

#include <cstdint>

#include "kernels/kv_row.h"

namespace qmlx {

struct AttentionShape {
  int T = 0, Nh = 0, Nkv = 0, D = 0;
  int64_t q_pos0 = 0;
  float scale = 1.f;       // usually 1/sqrt(D)
  bool generated = false;  // the rows are generated rows (decode steps, drafts being verified)
};

// q: [T][Nh][D]; out: [T][Nh][D].
void attention(const AttentionShape& s, const float* q, const void* k_cache, const void* v_cache,
               KvType kv_type, float* out);

}  // namespace qmlx
