#include "backend/vulkan/kv_store.h"

#include "backend/vulkan/binding_window.h"
#include "base/error.h"

namespace qmlx::vulkan {
namespace {

struct Push {
  uint32_t head_rows, D, src_base, dst_base, head_words;
  float int8_max;
};

}  // namespace

void record_kv_store(CommandRecorder& recorder, const Buffer& src, size_t src_offset, int rows,
                     int heads, int D, KvType kv_type, const Buffer& cache, int64_t first_row) {
  if (rows <= 0) return;
  if (D % 4 != 0) throw Error("Vulkan K/V store: head size " + std::to_string(D));
  Context& context = recorder.context();
  const size_t head_bytes = kv_head_bytes(kv_type, D);
  const size_t head_rows = size_t(rows) * heads;
  const size_t in_begin = src_offset * 4, in_end = in_begin + head_rows * D * 4;
  const size_t out_begin = size_t(first_row) * heads * head_bytes;
  const size_t out_end = out_begin + head_rows * head_bytes;
  if (in_end - in_begin > window_capacity(context) || out_end - out_begin > window_capacity(context))
    throw Error("Vulkan K/V store: more rows than one binding holds");
  const Window in = window(context, src, in_begin, in_end, 4, Access::kRead);
  const Window out = window(context, cache, out_begin, out_end, 4, Access::kWrite);
  const Pipeline& pipeline =
      context.pipelines().get({"kv_store", 2, sizeof(Push), {uint32_t(kv_type)}});
  const Push push{uint32_t(head_rows), uint32_t(D), in.base, out.base,
                  uint32_t(head_bytes / 4), 127.f};
  const Binding bindings[] = {in.binding, out.binding};
  recorder.dispatch(pipeline, bindings, &push, sizeof push, uint32_t((head_rows + 63) / 64));
}

}  // namespace qmlx::vulkan
