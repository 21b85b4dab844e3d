// ModelOptions: everything `qmlx make-model` needs to know to write a model folder: the
// architecture, the on-disk layout (Hugging Face or mlx-community), the float dtype, the
// optional MLX quantization, the shape, the seed and the shard count. Defaults are a tiny
// model that runs in milliseconds; presets give real shapes for benchmarks.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "modelgen/affine_quantizer.h"
#include "modelgen/tensor_dtype.h"

namespace qmlx::modelgen {

enum class Arch { kQwen35Moe, kQwen35, kQwen3Next, kQwen3 };
enum class Layout { kHF, kMLX };

Arch parse_arch(const std::string& name);
const char* arch_name(Arch arch);  // "qwen3_5_moe", "qwen3_5", "qwen3_next", "qwen3"
Layout parse_layout(const std::string& name);

bool is_qwen35_family(Arch arch);
bool has_linear_attention(Arch arch);
bool has_moe(Arch arch);
// Qwen3.5 and Qwen3-Next store norms as (1 + w); Qwen3 stores w.
bool has_zero_centred_norms(Arch arch);

// The vision tower of a Qwen3.5 checkpoint (config.json's vision_config) and the pixel bounds
// of its preprocessor_config.json. The defaults are tiny; the patch geometry is the real one
// (16 x 16 patches, 2 temporal copies, 2 x 2 merge), so src/image's pixel_values feed it. A
// 6 x 6 position grid is both smaller and larger than test images' grids, so its interpolation
// both shrinks and stretches.
struct VisionShape {
  int depth = 2;
  int hidden = 32;
  int heads = 2;
  int intermediate = 64;
  int num_position_embeddings = 36;
  int patch = 16;
  int temporal_patch = 2;
  int merge = 2;
  int in_channels = 3;
  // smart_resize's bounds: small, so a generated model's images are a few merged tokens a
  // side (4 and 64 merged tokens of 32 x 32 pixels).
  int64_t min_pixels = 4 * 32 * 32;
  int64_t max_pixels = 64 * 32 * 32;
};

// A real checkpoint's tower and preprocessor bounds by name ("qwen3.5-35b-a3b": 27 blocks,
// width 1152, 16 heads, MLP 4304, a 48 x 48 position grid, 65,536 to 16,777,216 pixels);
// throws qmlx::Error for an unknown name.
VisionShape vision_shape_preset(const std::string& name);

struct ModelShape {
  int hidden = 64;
  int layers = 4;
  int heads = 4;
  int kv_heads = 2;
  int head_dim = 32;
  int linear_key_heads = 2;
  int linear_value_heads = 4;
  int linear_key_dim = 16;
  int linear_value_dim = 16;
  int conv_kernel = 4;
  int intermediate = 128;
  int experts = 4;
  int experts_per_tok = 2;
  int moe_intermediate = 64;
  int shared_intermediate = 64;
  int vocab = 640;
  int full_attention_interval = 4;
  bool tie = false;
  double rope_theta = 1e7;
  double partial_rotary_factor = 0.25;
  double rms_norm_eps = 1e-6;
  int max_position_embeddings = 262144;
  // A multi-token-prediction head (`mtp.*`: one full-attention layer), as Qwen3.5 / Qwen3-Next
  // checkpoints ship.
  bool mtp = false;
  // A vision tower (`model.visual.*`, or mlx-vlm's `vision_tower.*` with the MLX layout), as
  // every Qwen3.5 checkpoint ships.
  bool vision = false;
  VisionShape vision_tower;
  // Explicit per-layer kinds; empty means "full attention iff (i+1) % interval == 0".
  std::vector<bool> full_attention_layers;

  bool is_full_attention(Arch arch, int layer) const;
  int rotary_dim(Arch arch) const;
  // Qwen3.5's interleaved M-RoPE sections (t, h, w), its 11:11:10 split of the 32 rotary
  // frequencies scaled to this shape's rotary_dim / 2 (which they sum to): [2, 1, 1] of 4.
  std::array<int, 3> mrope_section(Arch arch) const;
};

struct ModelOptions {
  Arch arch = Arch::kQwen35Moe;
  Layout layout = Layout::kHF;
  TensorDType dtype = TensorDType::kF32;
  std::optional<QuantParams> quantization;  // MLX layout only
  ModelShape shape;
  uint64_t seed = 0;
  int shards = 1;
  // Stored tensor names to leave out of the files (`make-model --omit-tensor`): a checkpoint
  // with part of it missing, as some converters and fine-tunes leave one, for tests.
  std::vector<std::string> omit_tensors;
};

// The tiny defaults of `arch` (Qwen3 gets full RoPE and theta 1e6, as the real models do).
ModelShape default_shape(Arch arch);
// A real model's shape by name ("qwen3.5-0.8b"); throws qmlx::Error for an unknown name.
ModelOptions preset_options(const std::string& name);
// Throws qmlx::Error naming the first inconsistent flag (e.g. heads not divisible).
void validate_options(const ModelOptions& options);

// True when the stored tensor `name` is one of options.omit_tensors.
bool is_omitted(const ModelOptions& options, const std::string& name);
// Throws qmlx::Error naming the first of options.omit_tensors the writer never met (`written`:
// every name it would have written), so a misspelt name does not give a whole model silently.
void require_omitted_tensors_exist(const ModelOptions& options,
                                   const std::vector<std::string>& written);

}  // namespace qmlx::modelgen
