// The built-in demo model: a small Qwen3.5-MoE-shaped model (MLX 4-bit) with random weights
// that `qmlx generate` and `qmlx serve` use when no --model is given. It is written once,
// deterministically, under qmlx_home()/models/demo-qwen3_5_moe; a temporary folder renamed
// into place makes the write atomic, so concurrent first runs never see half a model.
#pragma once

#include <string>

#include "modelgen/model_options.h"

namespace qmlx {

// The demo model's options (fixed seed): what ensure_demo_model() writes.
modelgen::ModelOptions demo_model_options();

// Returns the demo model's folder, writing it first if it does not exist.
std::string ensure_demo_model();

}  // namespace qmlx
