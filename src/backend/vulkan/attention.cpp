#include "backend/vulkan/attention.h"

#include "backend/vulkan/binding_window.h"
#include "backend/vulkan/fma_mode.h"
#include "base/error.h"

namespace qmlx::vulkan {
namespace {

struct Push {
  uint32_t heads, kv_heads, head_dim;
  float scale;
  uint32_t head_words, scratch_stride;
};

constexpr int kMaxHeadDim = 512;  // attention.glsl's MAX_D

// Bytes [0, bytes) of `buffer` as one binding, or an error naming what does not fit.
Window whole(const Context& context, const Buffer& buffer, size_t bytes, Access access,
             const char* what) {
  if (bytes > window_capacity(context))
    throw Error(std::string("Vulkan attention: the ") + what + " (" + std::to_string(bytes) +
                " bytes) is larger than one binding on " + context.device_info().name);
  return window(context, buffer, 0, bytes, 4, access);
}

}  // namespace

size_t attention_scratch_bytes(const DeviceAttentionShape& s) {
  return size_t(s.R) * s.Nh * s.kv_rows * 4;
}

void record_attention(CommandRecorder& recorder, const DeviceAttentionShape& s, const Buffer& q,
                      const Buffer& positions, const Buffer& k_cache, const Buffer& v_cache,
                      KvType kv_type, const Buffer& out, const Buffer* scratch) {
  if (s.R <= 0) return;
  if (s.D % 16 != 0 || s.D > kMaxHeadDim || s.Nkv <= 0 || s.Nh % s.Nkv != 0)
    throw Error("Vulkan attention: unsupported shape (D " + std::to_string(s.D) + ", " +
                std::to_string(s.Nh) + " heads over " + std::to_string(s.Nkv) + ")");
  Context& context = recorder.context();
  if (uint32_t(s.R) > context.device_info().max_workgroup_count[1] ||
      uint32_t(s.Nh) > context.device_info().max_workgroup_count[0])
    throw Error("Vulkan attention: more rows or heads than one dispatch can have");
  if (s.generated && (scratch == nullptr || scratch->size() < attention_scratch_bytes(s)))
    throw Error("Vulkan attention: generated rows need attention_scratch_bytes of scratch");
  const size_t head_bytes = kv_head_bytes(kv_type, s.D);
  const size_t cache_bytes = size_t(s.kv_rows) * s.Nkv * head_bytes;
  const size_t q_bytes = size_t(s.R) * s.Nh * s.D * 4;
  const Window queries = whole(context, q, q_bytes, Access::kRead, "query rows");
  const Window rows = whole(context, positions, size_t(s.R) * 4, Access::kRead, "positions");
  const Window keys = whole(context, k_cache, cache_bytes, Access::kRead, "K cache");
  const Window values = whole(context, v_cache, cache_bytes, Access::kRead, "V cache");
  const Window output = whole(context, out, q_bytes, Access::kWrite, "output");
  // Prompt rows never touch the scratch binding; the queries stand in for it.
  const Window scores = s.generated ? whole(context, *scratch, attention_scratch_bytes(s),
                                            Access::kReadWrite, "scratch")
                                    : queries;
  const Pipeline& pipeline = context.pipelines().get({fma_shader(context, "attention"),
                                                      6,
                                                      sizeof(Push),
                                                      {uint32_t(kv_type), s.generated ? 1u : 0u}});
  const Push push{uint32_t(s.Nh), uint32_t(s.Nkv),          uint32_t(s.D),
                  s.scale,        uint32_t(head_bytes / 4), uint32_t(s.kv_rows)};
  const Binding bindings[] = {queries.binding, rows.binding,   keys.binding,
                              values.binding,  output.binding, scores.binding};
  recorder.dispatch(pipeline, bindings, &push, sizeof push, uint32_t(s.Nh), uint32_t(s.R));
}

}  // namespace qmlx::vulkan
