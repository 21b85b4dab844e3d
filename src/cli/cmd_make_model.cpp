// `qmlx make-model`: writes a random model (or, with --script, the scripted fixture model) in
// the real Hugging Face or mlx-community layout, with a small byte-level tokenizer.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "cli/command.h"
#include "modelgen/gguf_model_writer.h"
#include "modelgen/mmproj_writer.h"
#include "modelgen/model_writer.h"
#include "modelgen/script_model.h"

namespace qmlx::cli {
namespace {

using namespace qmlx::modelgen;

struct ShapeFlags {
  std::optional<int> hidden, layers, heads, kv_heads, head_dim, linear_key_heads,
      linear_value_heads, linear_key_dim, linear_value_dim, intermediate, experts, experts_per_tok,
      moe_intermediate, shared_intermediate, vocab, full_attention_interval;
  std::optional<bool> tie;
  bool mtp = false;
  bool vision = false;
  std::string vision_shape;
};

void add_shape_flags(CLI::App& app, ShapeFlags& f) {
  app.add_option("--hidden", f.hidden, "hidden size");
  app.add_option("--layers", f.layers, "number of layers");
  app.add_option("--heads", f.heads, "attention heads");
  app.add_option("--kv-heads", f.kv_heads, "key/value heads");
  app.add_option("--head-dim", f.head_dim, "attention head dim");
  app.add_option("--linear-key-heads", f.linear_key_heads, "Gated DeltaNet key heads");
  app.add_option("--linear-value-heads", f.linear_value_heads, "Gated DeltaNet value heads");
  app.add_option("--linear-key-dim", f.linear_key_dim, "Gated DeltaNet key head dim");
  app.add_option("--linear-value-dim", f.linear_value_dim, "Gated DeltaNet value head dim");
  app.add_option("--intermediate", f.intermediate, "dense MLP intermediate size");
  app.add_option("--experts", f.experts, "MoE experts");
  app.add_option("--experts-per-tok", f.experts_per_tok, "MoE experts per token");
  app.add_option("--moe-intermediate", f.moe_intermediate, "expert intermediate size");
  app.add_option("--shared-intermediate", f.shared_intermediate, "shared expert intermediate");
  app.add_option("--vocab", f.vocab, "vocabulary size (>= the tokenizer's)");
  app.add_option("--full-attention-interval", f.full_attention_interval,
                 "every N-th layer is full attention");
  app.add_flag("--tie,!--no-tie", f.tie, "tie the LM head to the embeddings");
  app.add_flag("--mtp", f.mtp,
               "add a multi-token-prediction head (mtp.*; Qwen3.5, Qwen3-Next; with --script, one "
               "that predicts the script's token after next)");
  app.add_flag("--vision", f.vision,
               "add a tiny random vision tower (model.visual.*, or mlx-vlm's vision_tower.* with "
               "--layout mlx; Qwen3.5) and its vision_config");
  app.add_option("--vision-shape", f.vision_shape,
                 "with --vision: a real checkpoint's tower shape and preprocessor bounds instead "
                 "of the tiny one (qwen3.5-35b-a3b: about 0.8 GB in BF16, the default --dtype "
                 "then; the language model keeps its own shape)");
}

void apply_shape_flags(const ShapeFlags& f, ModelShape& s) {
  const auto set = [](const std::optional<int>& flag, int& field) {
    if (flag) field = *flag;
  };
  set(f.hidden, s.hidden);
  set(f.layers, s.layers);
  set(f.heads, s.heads);
  set(f.kv_heads, s.kv_heads);
  set(f.head_dim, s.head_dim);
  set(f.linear_key_heads, s.linear_key_heads);
  set(f.linear_value_heads, s.linear_value_heads);
  set(f.linear_key_dim, s.linear_key_dim);
  set(f.linear_value_dim, s.linear_value_dim);
  set(f.intermediate, s.intermediate);
  set(f.experts, s.experts);
  set(f.experts_per_tok, s.experts_per_tok);
  set(f.moe_intermediate, s.moe_intermediate);
  set(f.shared_intermediate, s.shared_intermediate);
  set(f.vocab, s.vocab);
  set(f.full_attention_interval, s.full_attention_interval);
  if (f.tie) s.tie = *f.tie;
  if (f.mtp) s.mtp = true;
  if (f.vision) s.vision = true;
  if (!f.vision_shape.empty()) {
    if (!s.vision) throw Error("--vision-shape needs --vision");
    s.vision_tower = vision_shape_preset(f.vision_shape);
  }
}

std::string read_text_file(const std::string& path, const std::string& flag) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw Error("cannot read " + flag + " file " + path);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

int run_make_model(int argc, char** argv) {
  CLI::App app{"Write a random model (or a scripted fixture model) with a small tokenizer",
               "make-model"};
  std::string out, arch = "qwen3_5_moe", layout = "hf", dtype, preset, script, template_arch;
  std::string script_after_tool, mmproj_out, mmproj_type;
  std::string format = "safetensors", gguf_type = "f32";
  std::optional<int> bits, group_size;
  std::vector<std::string> omit_tensors;
  uint64_t seed = 0;
  int shards = 1;
  ShapeFlags shape_flags;
  app.add_option("--out", out, "output folder (a .gguf file with --format gguf)")->required();
  app.add_option("--format", format, "safetensors | gguf (one llama.cpp-style .gguf file)");
  app.add_option("--gguf-type", gguf_type,
                 "GGUF tensor type: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k "
                 "q6_k, or q4_k_m (Q4_K with Q6_K where llama.cpp's Q4_K_M uses it)");
  app.add_option("--arch", arch, "qwen3_5_moe | qwen3_5 | qwen3_next | qwen3");
  app.add_option("--layout", layout, "hf | mlx");
  app.add_option("--dtype", dtype, "f32 | bf16 | f16 (default: f32 for hf, bf16 for mlx)");
  app.add_option("--bits", bits, "MLX affine quantization bits: 2 3 4 5 6 8 (needs --layout mlx)");
  app.add_option("--group-size", group_size, "MLX quantization group size: 32 64 128");
  app.add_option("--seed", seed, "random seed (same seed, same bytes)");
  app.add_option("--shards", shards, "number of safetensors files (with an index when > 1)");
  app.add_option("--preset", preset, "a real model's shape: qwen3.5-0.8b");
  app.add_option("--script", script,
                 "write the scripted fixture model: any prompt continues with this file's text");
  app.add_option("--script-after-tool", script_after_tool,
                 "--script only: any prompt holding a tool result (<tool_response>) continues "
                 "with this file's text instead, so a client's tool round trip ends");
  app.add_option("--template", template_arch,
                 "--script only: chat template of this arch (default: --arch)");
  app.add_option("--omit-tensor", omit_tensors,
                 "leave this stored tensor out (repeatable), for a checkpoint with a part missing "
                 "as some converters leave one: e.g. mtp.norm.weight, blk.4.nextn.enorm.weight");
  app.add_option("--mmproj-out", mmproj_out,
                 "with --vision: also write the tower as a llama.cpp mmproj GGUF file (matrices "
                 "in --dtype, other tensors as llama.cpp's converter types them); --omit-tensor "
                 "names starting v. or mm. apply to it");
  app.add_option("--mmproj-type", mmproj_type,
                 "the mmproj's matrices in this GGUF type instead of --dtype (q8_0: the "
                 "converter's --outtype q8_0)");
  add_shape_flags(app, shape_flags);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  if (!script.empty()) {
    ScriptModelOptions options;
    options.template_arch = parse_arch(template_arch.empty() ? arch : template_arch);
    options.mtp = shape_flags.mtp;
    options.vision = shape_flags.vision;
    options.omit_tensors = omit_tensors;
    if (!script_after_tool.empty()) {
      options.script_after_tool = read_text_file(script_after_tool, "--script-after-tool");
    }
    write_script_model(read_text_file(script, "--script"), options, out);
    std::printf("wrote scripted model to %s\n", out.c_str());
    return 0;
  }
  ModelOptions options;
  if (!preset.empty()) {
    options = preset_options(preset);
  } else {
    options.arch = parse_arch(arch);
    options.layout = parse_layout(layout);
    options.shape = default_shape(options.arch);
  }
  if (!dtype.empty()) {
    options.dtype = parse_float_dtype(dtype);
  } else if (!shape_flags.vision_shape.empty()) {
    // A real tower in f32 would be 1.6 GB and read twice the bytes its checkpoint does.
    options.dtype = TensorDType::kBF16;
  } else if (preset.empty()) {
    options.dtype = options.layout == Layout::kMLX ? TensorDType::kBF16 : TensorDType::kF32;
  }
  if (bits || group_size)
    options.quantization = QuantParams{bits.value_or(4), group_size.value_or(64)};
  options.seed = seed;
  options.shards = shards;
  apply_shape_flags(shape_flags, options.shape);
  if (!mmproj_out.empty() && !options.shape.vision) throw Error("--mmproj-out needs --vision");
  std::optional<GgufQuant> mmproj_matrices;
  if (!mmproj_type.empty()) {
    if (mmproj_out.empty()) throw Error("--mmproj-type needs --mmproj-out");
    mmproj_matrices = parse_gguf_quant(mmproj_type);
    if (!mmproj_matrices) throw Error("--mmproj-type: unknown GGUF type " + mmproj_type);
  }
  // The mmproj's tensor names go to its writer, the others to the model's.
  ModelOptions mmproj_options = options;
  for (const std::string& name : omit_tensors)
    (is_mmproj_tensor(name) && !mmproj_out.empty() ? mmproj_options : options)
        .omit_tensors.push_back(name);
  if (format == "gguf") {
    if (options.shape.vision && mmproj_out.empty())
      throw Error(
          "--vision with --format gguf needs --mmproj-out (llama.cpp keeps the tower in "
          "a separate mmproj file)");
    write_random_gguf_model(options, parse_gguf_recipe(gguf_type), out);
    std::printf("wrote %s GGUF model to %s\n", arch_name(options.arch), out.c_str());
  } else if (format == "safetensors") {
    write_random_model(options, out);
    std::printf("wrote %s model to %s\n", arch_name(options.arch), out.c_str());
  } else {
    throw Error("--format must be safetensors or gguf");
  }
  if (!mmproj_out.empty()) {
    write_random_mmproj(mmproj_options, mmproj_out, mmproj_matrices);
    std::printf("wrote its vision tower as an mmproj to %s\n", mmproj_out.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace qmlx::cli

QMLX_COMMAND(make_model, "make-model", "write a random or scripted test model",
             qmlx::cli::run_make_model);
