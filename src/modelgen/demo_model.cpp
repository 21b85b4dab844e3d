#include "modelgen/demo_model.h"

#include <unistd.h>
#include <filesystem>

#include "base/error.h"
#include "base/logging.h"
#include "base/process.h"
#include "modelgen/model_writer.h"

namespace qmlx {

modelgen::ModelOptions demo_model_options() {
  modelgen::ModelOptions options;
  options.arch = modelgen::Arch::kQwen35Moe;
  options.layout = modelgen::Layout::kMLX;
  options.dtype = modelgen::TensorDType::kBF16;
  options.quantization = modelgen::QuantParams{4, 64};
  options.seed = 20260101;
  options.shape = modelgen::default_shape(options.arch);
  auto& s = options.shape;
  s.hidden = 128;
  s.layers = 8;
  s.heads = 4;
  s.kv_heads = 2;
  s.head_dim = 64;
  s.linear_key_heads = 2;
  s.linear_value_heads = 4;
  s.linear_key_dim = 32;
  s.linear_value_dim = 32;
  s.experts = 8;
  s.experts_per_tok = 2;
  s.moe_intermediate = 64;
  s.shared_intermediate = 64;
  return options;
}

std::string ensure_demo_model() {
  namespace fs = std::filesystem;
  const fs::path models = fs::path(qmlx_home()) / "models";
  const fs::path target = models / "demo-qwen3_5_moe";
  if (fs::exists(target / "config.json")) return target.string();

  const fs::path temp = models / (".demo-qwen3_5_moe.tmp-" + std::to_string(::getpid()));
  std::error_code ignored;
  fs::remove_all(temp, ignored);
  log_info("writing the demo model to " + target.string());
  modelgen::write_random_model(demo_model_options(), temp.string());
  std::error_code error;
  fs::rename(temp, target, error);
  if (error) {
    fs::remove_all(temp, ignored);
    // Another process may have won the race; its model is identical.
    if (!fs::exists(target / "config.json")) {
      throw Error("cannot create the demo model in " + target.string() + ": " + error.message());
    }
  }
  return target.string();
}

}  // namespace qmlx
