// SessionState: the seam between the engine and the cache. A Session at position n is fully
// described by (a) the K/V rows of every full-attention layer for positions [0, n), (b) the
// conv and SSM state of every linear-attention (Gated DeltaNet) layer, and (c) the logits of
// position n-1. The cache sees only these plain buffers and their layout; it knows no model
// math. Everything here is plain data so it can be hashed, checksummed and written as is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace qmlx {

// How K/V rows are stored: plain f32 / f16 / bf16 values, or int8 codes with one float32 scale
// per row and head (kernels/kv_row.h has the exact row format).
enum class DType : uint8_t { kF32 = 0, kF16 = 1, kBF16 = 2, kInt8 = 3 };
enum class KvType : uint8_t;  // the kernels' row formats (kernels/kv_row.h)

// The kernels' row format that stores K/V rows of dtype t.
KvType kv_type_of(DType t);

const char* dtype_name(DType t);
// The dtype named `name` ("f32", "f16", "bf16", "int8"), as flags spell it.
std::optional<DType> dtype_from_name(std::string_view name);
// Every name dtype_from_name accepts, "bf16|int8|f32|f16", for help texts and errors.
std::string dtype_choices();

// The shapes of a Session's state; identical for every Session of one loaded model.
struct StateLayout {
  int num_layers = 0;
  std::vector<int> attention_layers;  // model layer index of each full-attention layer
  std::vector<int> recurrent_layers;  // model layer index of each Gated DeltaNet layer

  // Per attention layer and position: one K row and one V row of kv_heads * head_dim values.
  int kv_heads = 0;
  int head_dim = 0;
  DType kv_dtype = DType::kF32;

  // Per recurrent layer: conv state [conv_rows = K-1][conv_channels] (pre-convolution rows,
  // oldest first) and SSM state [ssm_heads][ssm_value_dim][ssm_key_dim], both float32.
  int conv_rows = 0;
  int conv_channels = 0;
  int ssm_heads = 0;
  int ssm_key_dim = 0;
  int ssm_value_dim = 0;

  int vocab_size = 0;  // length of the logits vector

  // Bytes of one position's K (or V) row: kv_heads head rows, int8 scales included.
  size_t kv_row_bytes() const;
  size_t conv_state_bytes() const { return size_t(conv_rows) * conv_channels * sizeof(float); }
  size_t ssm_state_bytes() const {
    return size_t(ssm_heads) * ssm_key_dim * ssm_value_dim * sizeof(float);
  }
  // K+V bytes added per token over all attention layers.
  size_t kv_bytes_per_token() const { return 2 * attention_layers.size() * kv_row_bytes(); }
  // Bytes of all recurrent state (independent of position).
  size_t recurrent_bytes() const {
    return recurrent_layers.size() * (conv_state_bytes() + ssm_state_bytes());
  }
  bool has_recurrent_state() const { return !recurrent_layers.empty(); }
  // A canonical one-line description; part of the cache fingerprint.
  std::string describe() const;
};

// A full snapshot of a Session at `position`, as plain buffers.
struct SessionState {
  int64_t position = 0;
  // keys[a] / values[a]: rows [0, position) of attention layer a (a indexes
  // StateLayout::attention_layers), position-major, position * kv_row_bytes() bytes each.
  std::vector<std::vector<uint8_t>> keys;
  std::vector<std::vector<uint8_t>> values;
  // conv_states[r] / ssm_states[r]: recurrent layer r (indexes StateLayout::recurrent_layers).
  std::vector<std::vector<float>> conv_states;
  std::vector<std::vector<float>> ssm_states;
  // Logits at position-1 (empty when position == 0).
  std::vector<float> logits;
};

// Read access to a live Session's state, so the cache copies out only what it lacks (new
// K/V chunks, the recurrent state, the logits) instead of a full export per checkpoint.
class StateSource {
 public:
  virtual ~StateSource() = default;
  virtual const StateLayout& layout() const = 0;
  virtual int64_t position() const = 0;
  // Copies K and V rows [begin, end) of attention layer a (an index into
  // layout().attention_layers) into k_out / v_out, (end - begin) * kv_row_bytes() bytes each.
  virtual void read_kv_rows(int a, int64_t begin, int64_t end, uint8_t* k_out,
                            uint8_t* v_out) const = 0;
  // Copies recurrent layer r's conv state (conv_state_bytes()) and SSM state (ssm_state_bytes()).
  virtual void read_recurrent(int r, float* conv_out, float* ssm_out) const = 0;
  // Logits at position()-1; empty at position 0.
  virtual std::span<const float> logits() const = 0;
};

// Write access to install a restored state into a Session. Usage: reset(n), then every
// write_kv_rows for rows [0, n) and every write_recurrent, then set_logits; the Session is
// then exactly as if it had prefilled those n tokens.
class StateSink {
 public:
  virtual ~StateSink() = default;
  virtual const StateLayout& layout() const = 0;
  // Drops the current state and makes room for `position` rows per attention layer.
  virtual void reset(int64_t position) = 0;
  virtual void write_kv_rows(int a, int64_t begin, int64_t end, const uint8_t* k,
                             const uint8_t* v) = 0;
  virtual void write_recurrent(int r, const float* conv, const float* ssm) = 0;
  virtual void set_logits(std::span<const float> logits) = 0;
};

}  // namespace qmlx
