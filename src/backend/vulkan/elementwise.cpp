#include "backend/vulkan/elementwise.h"

#include <algorithm>

#include "backend/vulkan/binding_window.h"
#include "backend/vulkan/fma_mode.h"

namespace qmlx::vulkan {
namespace {

enum class Op : uint32_t { kSiluMul = 0, kSigmoidMul = 1, kAdd = 2 };

struct Push {
  uint32_t count, vector_count, a_base, b_base;
};

// Enough workgroups to fill any current GPU; the grid-stride loop covers the rest.
constexpr size_t kMaxGroups = 4096;

void record_elementwise(CommandRecorder& recorder, Op op, const Buffer& a, const Buffer& b,
                        size_t n) {
  if (n == 0) return;
  Context& context = recorder.context();
  const Pipeline& pipeline = context.pipelines().get(
      {fma_shader(context, "elementwise"), 2, sizeof(Push), {uint32_t(op)}});
  // Pieces start at multiples of 8 floats, so the CPU's 8-float blocks never straddle two.
  const size_t per_dispatch = window_capacity(context) / 4 & ~size_t(7);
  const size_t vector_end = n & ~size_t(7);
  for (size_t first = 0; first < n; first += per_dispatch) {
    const size_t count = std::min(per_dispatch, n - first);
    const size_t vectors = vector_end > first ? std::min(count, vector_end - first) : 0;
    const Window target = window(context, a, first * 4, (first + count) * 4, 4, Access::kReadWrite);
    const Window operand = window(context, b, first * 4, (first + count) * 4, 4, Access::kRead);
    const Push push{uint32_t(count), uint32_t(vectors), target.base, operand.base};
    const size_t groups = std::min(
        {(count + 63) / 64, kMaxGroups, size_t(context.device_info().max_workgroup_count[0])});
    const Binding bindings[] = {target.binding, operand.binding};
    recorder.dispatch(pipeline, bindings, &push, sizeof push, uint32_t(groups));
  }
}

}  // namespace

void record_silu_mul(CommandRecorder& recorder, const Buffer& a, const Buffer& b, size_t n) {
  record_elementwise(recorder, Op::kSiluMul, a, b, n);
}

void record_sigmoid_mul(CommandRecorder& recorder, const Buffer& a, const Buffer& b, size_t n) {
  record_elementwise(recorder, Op::kSigmoidMul, a, b, n);
}

void record_add(CommandRecorder& recorder, const Buffer& a, const Buffer& b, size_t n) {
  record_elementwise(recorder, Op::kAdd, a, b, n);
}

}  // namespace qmlx::vulkan
