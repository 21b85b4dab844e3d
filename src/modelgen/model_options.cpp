#include "modelgen/model_options.h"

#include <algorithm>

#include "base/error.h"

namespace qmlx::modelgen {

Arch parse_arch(const std::string& name) {
  if (name == "qwen3_5_moe") return Arch::kQwen35Moe;
  if (name == "qwen3_5") return Arch::kQwen35;
  if (name == "qwen3_next") return Arch::kQwen3Next;
  if (name == "qwen3") return Arch::kQwen3;
  throw Error("unknown --arch '" + name + "' (expected qwen3_5_moe, qwen3_5, qwen3_next, qwen3)");
}

const char* arch_name(Arch arch) {
  switch (arch) {
    case Arch::kQwen35Moe:
      return "qwen3_5_moe";
    case Arch::kQwen35:
      return "qwen3_5";
    case Arch::kQwen3Next:
      return "qwen3_next";
    case Arch::kQwen3:
      return "qwen3";
  }
  return "?";
}

Layout parse_layout(const std::string& name) {
  if (name == "hf") return Layout::kHF;
  if (name == "mlx") return Layout::kMLX;
  throw Error("unknown --layout '" + name + "' (expected hf or mlx)");
}

bool is_qwen35_family(Arch arch) { return arch == Arch::kQwen35Moe || arch == Arch::kQwen35; }
bool has_linear_attention(Arch arch) { return arch != Arch::kQwen3; }
bool has_moe(Arch arch) { return arch == Arch::kQwen35Moe || arch == Arch::kQwen3Next; }
bool has_zero_centred_norms(Arch arch) { return arch != Arch::kQwen3; }

bool ModelShape::is_full_attention(Arch arch, int layer) const {
  if (!has_linear_attention(arch)) return true;
  if (!full_attention_layers.empty()) return full_attention_layers.at(layer);
  return (layer + 1) % full_attention_interval == 0;
}

int ModelShape::rotary_dim(Arch arch) const {
  if (arch == Arch::kQwen3) return head_dim;
  return static_cast<int>(head_dim * partial_rotary_factor);
}

std::array<int, 3> ModelShape::mrope_section(Arch arch) const {
  const int pairs = rotary_dim(arch) / 2, t = (pairs * 11 + 31) / 32, h = (pairs - t + 1) / 2;
  return {t, h, pairs - t - h};
}

ModelShape default_shape(Arch arch) {
  ModelShape shape;
  if (arch == Arch::kQwen3) {
    shape.head_dim = 16;
    shape.rope_theta = 1e6;
    shape.partial_rotary_factor = 1.0;
    shape.max_position_embeddings = 40960;
  }
  return shape;
}

ModelOptions preset_options(const std::string& name) {
  if (name != "qwen3.5-0.8b") {
    throw Error("unknown --preset '" + name + "' (known: qwen3.5-0.8b)");
  }
  // model-spec §1.3: Qwen3.5-0.8B (dense, tied).
  ModelOptions options;
  options.arch = Arch::kQwen35;
  options.layout = Layout::kMLX;
  options.dtype = TensorDType::kBF16;
  ModelShape& s = options.shape;
  s.hidden = 1024;
  s.layers = 24;
  s.heads = 8;
  s.kv_heads = 2;
  s.head_dim = 256;
  s.linear_key_heads = 16;
  s.linear_value_heads = 16;
  s.linear_key_dim = 128;
  s.linear_value_dim = 128;
  s.intermediate = 3584;
  s.vocab = 248320;
  s.tie = true;
  return options;
}

VisionShape vision_shape_preset(const std::string& name) {
  if (name != "qwen3.5-35b-a3b")
    throw Error("unknown --vision-shape '" + name + "' (known: qwen3.5-35b-a3b)");
  // Qwen3.5-35B-A3B's config.json vision_config and preprocessor_config.json.
  return {27, 1152, 16, 4304, 2304, 16, 2, 2, 3, 65536, 16777216};
}

namespace {

void require(bool condition, const std::string& message) {
  if (!condition) throw Error(message);
}

}  // namespace

void validate_options(const ModelOptions& options) {
  const ModelShape& s = options.shape;
  require(s.hidden > 0 && s.layers > 0 && s.vocab > 0, "--hidden, --layers, --vocab must be > 0");
  require(s.heads > 0 && s.kv_heads > 0 && s.heads % s.kv_heads == 0,
          "--heads must be a positive multiple of --kv-heads");
  require(s.head_dim > 0 && s.head_dim % 2 == 0, "--head-dim must be even");
  require(s.rotary_dim(options.arch) % 2 == 0 && s.rotary_dim(options.arch) > 0,
          "rotary dim (head_dim * partial_rotary_factor) must be even and > 0");
  if (has_linear_attention(options.arch)) {
    require(s.linear_key_heads > 0 && s.linear_value_heads % s.linear_key_heads == 0,
            "--linear-value-heads must be a multiple of --linear-key-heads");
    require(s.linear_key_dim > 0 && s.linear_value_dim > 0, "linear head dims must be > 0");
    require(s.full_attention_interval > 0, "--full-attention-interval must be > 0");
  }
  if (has_moe(options.arch)) {
    require(s.experts > 0 && s.experts_per_tok > 0 && s.experts_per_tok <= s.experts,
            "--experts-per-tok must be in [1, --experts]");
    require(s.moe_intermediate > 0 && s.shared_intermediate > 0, "MoE sizes must be > 0");
  } else {
    require(s.intermediate > 0, "--intermediate must be > 0");
  }
  require(options.shards >= 1, "--shards must be >= 1");
  require(!s.mtp || has_linear_attention(options.arch),
          "--mtp needs a Qwen3.5 or Qwen3-Next --arch (Qwen3 has no MTP head)");
  if (s.vision) {
    const VisionShape& v = s.vision_tower;
    require(is_qwen35_family(options.arch), "--vision needs a Qwen3.5 --arch");
    require(v.depth > 0 && v.heads > 0 && v.hidden % v.heads == 0 && (v.hidden / v.heads) % 4 == 0,
            "vision tower: heads must divide its width into head dims that are multiples of 4");
  }
  if (options.quantization) {
    require(options.layout == Layout::kMLX,
            "--bits needs --layout mlx (HF files are not quantized)");
    require(is_supported_quantization(*options.quantization),
            "--bits must be 2, 3, 4, 5, 6 or 8 and --group-size 32, 64 or 128");
  }
}

bool is_omitted(const ModelOptions& options, const std::string& name) {
  const auto& omit = options.omit_tensors;
  return std::find(omit.begin(), omit.end(), name) != omit.end();
}

void require_omitted_tensors_exist(const ModelOptions& options,
                                   const std::vector<std::string>& written) {
  for (const std::string& name : options.omit_tensors)
    if (std::find(written.begin(), written.end(), name) == written.end())
      throw Error("--omit-tensor " + name + ": the model has no tensor of that name");
}

}  // namespace qmlx::modelgen
