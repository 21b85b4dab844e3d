#include "backend/vulkan/causal_conv.h"

#include <algorithm>

#include "backend/vulkan/binding_window.h"
#include "backend/vulkan/fma_mode.h"
#include "base/error.h"

namespace qmlx::vulkan {
namespace {

struct Push {
  uint32_t rows, channels, taps, x_stride;
};

constexpr int kMaxTaps = 8;  // causal_conv.glsl's MAX_TAPS

}  // namespace

void record_causal_conv1d_silu(CommandRecorder& recorder, const Buffer& x, size_t x_stride, int T,
                               int C, int K, const Buffer& w, const Buffer& state,
                               const Buffer& out, const Buffer* history) {
  if (T <= 0 || C <= 0) return;
  if (K < 2 || K > kMaxTaps) throw Error("causal conv: " + std::to_string(K) + " taps");
  Context& context = recorder.context();
  const size_t x_bytes = ((size_t(T) - 1) * x_stride + size_t(C)) * 4;
  const size_t out_bytes = size_t(T) * C * 4;
  const size_t state_bytes = size_t(K - 1) * C * 4;
  const size_t history_bytes = history ? size_t(T) * state_bytes : 0;
  if (std::max({x_bytes, out_bytes, history_bytes}) > window_capacity(context))
    throw Error("causal conv: " + std::to_string(T) + " rows are more than one binding holds");
  const Pipeline& pipeline = context.pipelines().get(
      {fma_shader(context, "causal_conv"), 5, sizeof(Push), {uint32_t(history != nullptr)}});
  const Window in = window(context, x, 0, x_bytes, 4, Access::kRead);
  const Window taps = window(context, w, 0, size_t(K) * C * 4, 4, Access::kRead);
  const Window carried = window(context, state, 0, state_bytes, 4, Access::kReadWrite);
  const Window output = window(context, out, 0, out_bytes, 4, Access::kWrite);
  // Without a history the shader never touches binding 4: the output stands in for it.
  const Window kept =
      history ? window(context, *history, 0, history_bytes, 4, Access::kWrite) : output;
  const Push push{uint32_t(T), uint32_t(C), uint32_t(K), uint32_t(x_stride)};
  const Binding bindings[] = {in.binding, taps.binding, carried.binding, output.binding,
                              kept.binding};
  recorder.dispatch(pipeline, bindings, &push, sizeof push, uint32_t((C + 63) / 64));
}

}  // namespace qmlx::vulkan
