// Scaled-dot-product attention without a mask: every one of T rows sees all T rows, itself
// included (the vision tower's attention over the patches of one image frame). Query, key and
// value rows are read where a fused projection wrote them (row t, head h at
// t * row_stride + h * D), so the q/k/v columns of one [T][3 * heads * D] output serve without
// a copy by the caller (each head's rows are gathered once inside, so that Q K^T and P V run on
// the packed GEMM of kernels/matmul.h). Softmax in fp32 with its maximum subtracted.
// (head, query block) pairs are spread over default_pool(); a row's arithmetic does not
// depend on the split (the GEMM's prompt rows have one arithmetic whatever their count).
#pragma once

#include <cstddef>

namespace qmlx {

struct BidirectionalAttentionShape {
  int T = 0, heads = 0, D = 0;
  size_t row_stride = 0;  // floats between consecutive rows of q, k and v
  float scale = 1.f;      // usually 1/sqrt(D)
};

// out: [T][heads][D].
void bidirectional_attention(const BidirectionalAttentionShape& s, const float* q, const float* k,
                             const float* v, float* out);

}  // namespace qmlx
