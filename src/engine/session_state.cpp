#include "engine/session_state.h"

#include <sstream>

#include "kernels/kv_row.h"

namespace qmlx {
namespace {

// In the order help texts list them: the default first.
constexpr DType kDTypes[] = {DType::kBF16, DType::kInt8, DType::kF32, DType::kF16};

}  // namespace

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kF32:
      return "f32";
    case DType::kF16:
      return "f16";
    case DType::kBF16:
      return "bf16";
    case DType::kInt8:
      return "int8";
  }
  return "?";
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (DType t : kDTypes)
    if (name == dtype_name(t)) return t;
  return std::nullopt;
}

std::string dtype_choices() {
  std::string text;
  for (DType t : kDTypes) text += std::string(text.empty() ? "" : "|") + dtype_name(t);
  return text;
}

KvType kv_type_of(DType t) {
  switch (t) {
    case DType::kF16:
      return KvType::kF16;
    case DType::kBF16:
      return KvType::kBF16;
    case DType::kInt8:
      return KvType::kInt8;
    case DType::kF32:
      break;
  }
  return KvType::kF32;
}

size_t StateLayout::kv_row_bytes() const {
  return size_t(kv_heads) * kv_head_bytes(kv_type_of(kv_dtype), head_dim);
}

std::string StateLayout::describe() const {
  std::ostringstream s;
  s << "layers=" << num_layers << " attn=[";
  for (size_t i = 0; i < attention_layers.size(); ++i) s << (i ? "," : "") << attention_layers[i];
  s << "] rec=[";
  for (size_t i = 0; i < recurrent_layers.size(); ++i) s << (i ? "," : "") << recurrent_layers[i];
  s << "] kv=" << kv_heads << "x" << head_dim << ":" << dtype_name(kv_dtype)
    << " conv=" << conv_rows << "x" << conv_channels << " ssm=" << ssm_heads << "x" << ssm_value_dim
    << "x" << ssm_key_dim << " vocab=" << vocab_size;
  return s.str();
}

}  // namespace qmlx
