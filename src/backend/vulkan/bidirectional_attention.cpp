#include "backend/vulkan/bidirectional_attention.h"

#include <algorithm>
#include <string>

#include "backend/vulkan/binding_window.h"
#include "base/error.h"

namespace qmlx::vulkan {
namespace {

struct Push {
  uint32_t T, D;
  uint32_t q_stride, k_stride, v_stride, o_stride;
  uint32_t q_base, k_base, v_base, o_base;
  uint32_t first_query;
  float scale;
};

constexpr int kMaxHeadDim = 128;

Window rows_window(const Context& context, const AttentionRows& r, const BidirectionalShape& s,
                   Access access) {
  const size_t begin = r.offset * 4;
  return window(context, *r.buffer, begin, begin + attention_rows_bytes(r, s), 4, access);
}

}  // namespace

size_t attention_rows_bytes(const AttentionRows& r, const BidirectionalShape& s) {
  if (s.T <= 0) return 0;
  return ((size_t(s.T) - 1) * r.stride + size_t(s.heads) * s.D) * 4;
}

bool bidirectional_attention_fits(const Context& context, const BidirectionalShape& s,
                                  const AttentionRows& q, const AttentionRows& k,
                                  const AttentionRows& v, const AttentionRows& out,
                                  std::string* why) {
  auto fail = [&](const std::string& text) {
    if (why) *why = "bidirectional attention: " + text;
    return false;
  };
  if (s.D <= 0 || s.D > kMaxHeadDim)
    return fail("head dimension " + std::to_string(s.D) + " is outside 1.." +
                std::to_string(kMaxHeadDim));
  if (uint32_t(s.heads) > context.device_info().max_workgroup_count[1])
    return fail(std::to_string(s.heads) + " heads are more workgroups than the device runs");
  const size_t capacity = window_capacity(context);
  for (const AttentionRows* r : {&q, &k, &v, &out})
    if (attention_rows_bytes(*r, s) > capacity)
      return fail("a frame of " + std::to_string(s.T) + " rows spans " +
                  std::to_string(attention_rows_bytes(*r, s) >> 20) +
                  " MiB, more than one binding holds on " + context.device_info().name);
  return true;
}

void record_bidirectional_attention(CommandRecorder& recorder, const BidirectionalShape& s,
                                    const AttentionRows& q, const AttentionRows& k,
                                    const AttentionRows& v, const AttentionRows& out) {
  if (s.T <= 0 || s.heads <= 0) return;
  Context& context = recorder.context();
  std::string why;
  if (!bidirectional_attention_fits(context, s, q, k, v, out, &why)) throw Error(why);
  const Pipeline& pipeline =
      context.pipelines().get({"bidirectional_attention", 4, sizeof(Push), {}});
  const Window wq = rows_window(context, q, s, Access::kRead);
  const Window wk = rows_window(context, k, s, Access::kRead);
  const Window wv = rows_window(context, v, s, Access::kRead);
  const Window wo = rows_window(context, out, s, Access::kWrite);
  const Binding bindings[] = {wq.binding, wk.binding, wv.binding, wo.binding};
  const size_t per_dispatch = context.device_info().max_workgroup_count[0];
  for (size_t t0 = 0; t0 < size_t(s.T); t0 += per_dispatch) {
    const size_t count = std::min(per_dispatch, size_t(s.T) - t0);
    const Push push{uint32_t(s.T),
                    uint32_t(s.D),
                    uint32_t(q.stride),
                    uint32_t(k.stride),
                    uint32_t(v.stride),
                    uint32_t(out.stride),
                    wq.base,
                    wk.base,
                    wv.base,
                    wo.base,
                    uint32_t(t0),
                    s.scale};
    recorder.dispatch(pipeline, bindings, &push, sizeof push, uint32_t(count), uint32_t(s.heads));
  }
}

}  // namespace qmlx::vulkan
