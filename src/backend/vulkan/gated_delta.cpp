#include "backend/vulkan/gated_delta.h"

#include <algorithm>

#include "backend/vulkan/binding_window.h"
#include "backend/vulkan/fma_mode.h"
#include "base/error.h"

namespace qmlx::vulkan {
namespace {

struct Push {
  uint32_t tokens, key_heads, value_heads, key_dim, value_dim, row_stride;
  uint32_t q_offset, k_offset, v_offset;
};

}  // namespace

void record_gated_delta(CommandRecorder& recorder, const DeviceGatedDeltaInputs& in,
                        const Buffer& qkv, const Buffer& g, const Buffer& beta, const Buffer& state,
                        const Buffer& out, const Buffer* history) {
  if (in.T <= 0 || in.Hv <= 0) return;
  if (in.Hk <= 0 || in.Hv % in.Hk != 0) throw Error("gated delta: Hv is not a multiple of Hk");
  Context& context = recorder.context();
  const size_t last =
      std::max({in.q_offset + size_t(in.Hk) * in.Dk, in.k_offset + size_t(in.Hk) * in.Dk,
                in.v_offset + size_t(in.Hv) * in.Dv});
  const size_t qkv_bytes = ((size_t(in.T) - 1) * in.row_stride + last) * 4;
  const size_t gate_bytes = size_t(in.T) * in.Hv * 4;
  const size_t state_bytes = size_t(in.Hv) * in.Dv * in.Dk * 4;
  const size_t out_bytes = size_t(in.T) * in.Hv * in.Dv * 4;
  const size_t history_bytes = history ? size_t(in.T) * state_bytes : 0;
  if (std::max({qkv_bytes, state_bytes, out_bytes, history_bytes}) > window_capacity(context))
    throw Error(
        "gated delta: the inputs, state, output or states kept are larger than one binding");
  const Pipeline& pipeline = context.pipelines().get(
      {fma_shader(context, "gated_delta"), 6, sizeof(Push), {uint32_t(history != nullptr)}});
  const Window inputs = window(context, qkv, 0, qkv_bytes, 4, Access::kRead);
  const Window decay = window(context, g, 0, gate_bytes, 4, Access::kRead);
  const Window betas = window(context, beta, 0, gate_bytes, 4, Access::kRead);
  const Window ssm = window(context, state, 0, state_bytes, 4, Access::kReadWrite);
  const Window output = window(context, out, 0, out_bytes, 4, Access::kWrite);
  // Without a history the shader never touches binding 5: the output stands in for it.
  const Window kept =
      history ? window(context, *history, 0, history_bytes, 4, Access::kWrite) : output;
  const Push push{uint32_t(in.T),        uint32_t(in.Hk),       uint32_t(in.Hv),
                  uint32_t(in.Dk),       uint32_t(in.Dv),       uint32_t(in.row_stride),
                  uint32_t(in.q_offset), uint32_t(in.k_offset), uint32_t(in.v_offset)};
  const Binding bindings[] = {inputs.binding, decay.binding,  betas.binding,
                              ssm.binding,    output.binding, kept.binding};
  const size_t invocations = size_t(in.Hv) * in.Dv;
  recorder.dispatch(pipeline, bindings, &push, sizeof push, uint32_t((invocations + 63) / 64));
}

}  // namespace qmlx::vulkan
