// Normalisations used by the Qwen family: RMSNorm (the +1 of zero-centred norms is folded into
// the weight at load, so one kernel serves both), the gated RMSNorm of Gated DeltaNet outputs,
// the L2 normalisation of Gated DeltaNet queries and keys, and the LayerNorm (weight and bias)
// of the vision tower.
#pragma once

#include <cstddef>

namespace qmlx {

// out = x / sqrt(mean(x^2) + eps) * w; out may alias x.
void rms_norm(const float* x, const float* w, size_t n, float eps, float* out);

// out = w * rms_norm(x) * silu(z) (Qwen3_5RMSNormGated); out may alias x.
void rms_norm_gated(const float* x, const float* z, const float* w, size_t n, float eps,
                    float* out);

// out = (x - mean(x)) / sqrt(var(x) + eps) * w + b, the biased variance as torch's LayerNorm
// takes it; out may alias x.
void layer_norm(const float* x, const float* w, const float* b, size_t n, float eps, float* out);

// x = x / sqrt(sum(x^2) + eps) * scale, in place.
void l2_norm_scaled(float* x, size_t n, float eps, float scale);

}  // namespace qmlx
