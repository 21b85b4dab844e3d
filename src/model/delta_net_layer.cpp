// Gated DeltaNet (model-spec §3.4): project to qkv, z, b, a; causal conv + SiLU over qkv with the
// carried conv state; L2-normalise q and k per head (q also scaled by Dk^-1/2); beta =
// sigmoid(b), g = -exp(A_log) * softplus(a + dt_bias); the gated delta rule; per-head gated
// RMSNorm with z; out_proj. The projections run over all rows of the batch; the conv and the
// delta rule per sequence, over that sequence's own recurrent state.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/activations.h"
#include "kernels/causal_conv.h"
#include "kernels/gated_delta.h"
#include "kernels/matmul.h"
#include "kernels/norms.h"
#include "model/layers.h"

namespace qmlx {
namespace {

// state.history->conv: after token t, the last K-1 rows of [state.conv; qkv rows 0..t] (what the
// convolution leaves behind), written before the convolution updates state.conv.
void keep_conv_history(const float* qkv, int T, int CD, int K, RecurrentState& state) {
  const size_t rows = size_t(K - 1), row = size_t(CD);
  std::vector<float>& out = state.history->conv;
  out.resize(size_t(T) * rows * row);
  for (int t = 0; t < T; ++t)
    for (size_t r = 0; r < rows; ++r) {
      // Row r of the state after token t is input row t - (K-2) + r (negative: the old state).
      const int64_t s = int64_t(t) - int64_t(rows) + 1 + int64_t(r);
      const float* from =
          s >= 0 ? qkv + size_t(s) * row : state.conv.data() + size_t(int64_t(rows) + s) * row;
      std::copy_n(from, row, out.data() + (size_t(t) * rows + r) * row);
    }
}

// The token recurrence one token at a time (the recurrence's arithmetic per token does not depend
// on how many tokens a call holds), copying the SSM state after each into state.history->ssm.
void recurrent_with_history(const GatedDeltaInputs& in, RecurrentState& state, float* out) {
  const size_t per_token = state.ssm.size();
  std::vector<float>& kept = state.history->ssm;
  kept.resize(size_t(in.T) * per_token);
  const size_t head_out = size_t(in.Hv) * in.Dv;
  for (int t = 0; t < in.T; ++t) {
    GatedDeltaInputs one = in;
    one.T = 1;
    one.q += size_t(t) * in.row_stride;
    one.k += size_t(t) * in.row_stride;
    one.v += size_t(t) * in.row_stride;
    one.g += size_t(t) * in.Hv;
    one.beta += size_t(t) * in.Hv;
    gated_delta_recurrent(one, state.ssm.data(), out + size_t(t) * head_out);
    std::copy(state.ssm.begin(), state.ssm.end(), kept.begin() + size_t(t) * per_token);
  }
}

}  // namespace

void delta_net_layer(const DeltaNetWeights& w, const ModelConfig& c, const float* x,
                     const RaggedRows& rows, size_t slot, DeltaRuleForm form, float* out) {
  const int Hk = c.linear_key_heads, Hv = c.linear_value_heads;
  const int Dk = c.linear_key_dim, Dv = c.linear_value_dim;
  const int CD = c.conv_channels(), KD = c.linear_key_size(), VD = c.linear_value_size();
  const int T = rows.total, G = rows.generated;
  const float eps = c.rms_norm_eps;
  std::vector<float> qkv(size_t(T) * CD), z(size_t(T) * VD), b(size_t(T) * Hv), a(size_t(T) * Hv);
  const MatmulOutput projections[] = {
      {&w.qkv, qkv.data()}, {&w.z, z.data()}, {&w.b, b.data()}, {&w.a, a.data()}};
  matmul_many(x, T, projections, G);

  std::vector<float> conv(size_t(T) * CD);
  for (const SequenceRows& s : rows.sequences) {
    RecurrentState& state = s.state->recurrent[slot];
    if (state.history)
      keep_conv_history(qkv.data() + size_t(s.first) * CD, s.count, CD, c.conv_kernel, state);
    causal_conv1d_silu(qkv.data() + size_t(s.first) * CD, CD, s.count, CD, c.conv_kernel,
                       w.conv.data(), s.state->recurrent[slot].conv.data(),
                       conv.data() + size_t(s.first) * CD);
  }
  // Released now rather than at return: it is the layer's largest buffer (32 MiB at 1,024
  // tokens on the 35B-A3B shape) and the rest of the layer peaks without it.
  std::vector<float>().swap(qkv);

  const float q_scale = 1.f / std::sqrt(float(Dk));
  for (int t = 0; t < T; ++t) {
    float* row = conv.data() + size_t(t) * CD;
    for (int h = 0; h < Hk; ++h) {
      l2_norm_scaled(row + h * Dk, Dk, 1e-6f, q_scale);
      l2_norm_scaled(row + KD + h * Dk, Dk, 1e-6f, 1.f);
    }
    for (int h = 0; h < Hv; ++h) {
      size_t i = size_t(t) * Hv + h;
      b[i] = sigmoid(b[i]);                           // beta
      a[i] = w.A[h] * softplus(a[i] + w.dt_bias[h]);  // g
    }
  }

  // The recurrence by default, for any T: it is the one form whose result for a token does not
  // depend on how many tokens share the call (the chunked form's WY products sum over the chunk
  // in another order), so prefills split anywhere and decode steps agree to the bit.
  std::vector<float> o(size_t(T) * VD);
  for (const SequenceRows& s : rows.sequences) {
    GatedDeltaInputs in;
    in.T = s.count;
    in.Hk = Hk;
    in.Hv = Hv;
    in.Dk = Dk;
    in.Dv = Dv;
    in.q = conv.data() + size_t(s.first) * CD;
    in.k = in.q + KD;
    in.v = in.q + 2 * KD;
    in.row_stride = CD;
    in.g = a.data() + size_t(s.first) * Hv;
    in.beta = b.data() + size_t(s.first) * Hv;
    RecurrentState& state = s.state->recurrent[slot];
    float* so = o.data() + size_t(s.first) * VD;
    if (state.history)
      recurrent_with_history(in, state, so);
    else if (form == DeltaRuleForm::kChunked)
      gated_delta_chunked(in, state.ssm.data(), so);
    else
      gated_delta_recurrent(in, state.ssm.data(), so);
  }

  for (int t = 0; t < T; ++t)
    for (int h = 0; h < Hv; ++h) {
      size_t off = size_t(t) * VD + size_t(h) * Dv;
      rms_norm_gated(o.data() + off, z.data() + off, w.norm.data(), Dv, eps, o.data() + off);
    }
  if (!w.out_heads.empty()) {
    // One token's heads at a time: a copy of all of o would be another T x VD buffer.
    std::vector<float> grouped(VD);
    for (int t = 0; t < T; ++t) {
      float* row = o.data() + size_t(t) * VD;
      std::copy_n(row, VD, grouped.data());
      for (int i = 0; i < Hv; ++i)
        std::copy_n(grouped.data() + size_t(w.out_heads[i]) * Dv, Dv, row + size_t(i) * Dv);
    }
  }
  matmul(o.data(), T, w.out, out, G);
}

}  // namespace qmlx
