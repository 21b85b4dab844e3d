#include "engine/session_state.h"

#include <sstream>

namespace qmlx {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::kF32:
      return 4;
    case DType::kF16:
    case DType::kBF16:
      return 2;
  }
  return 4;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kF32:
      return "f32";
    case DType::kF16:
      return "f16";
    case DType::kBF16:
      return "bf16";
  }
  return "?";
}

std::string StateLayout::describe() const {
  std::ostringstream s;
  s << "layers=" << num_layers << " attn=[";
  for (size_t i = 0; i < attention_layers.size(); ++i) s << (i ? "," : "") << attention_layers[i];
  s << "] rec=[";
  for (size_t i = 0; i < recurrent_layers.size(); ++i) s << (i ? "," : "") << recurrent_layers[i];
  s << "] kv=" << kv_heads << "x" << head_dim << ":" << dtype_name(kv_dtype) << " conv=" << conv_rows
    << "x" << conv_channels << " ssm=" << ssm_heads << "x" << ssm_value_dim << "x" << ssm_key_dim
    << " vocab=" << vocab_size;
  return s.str();
}

}  // namespace qmlx
