#include "engine/cpu_moe_flags.h"

#include <CLI/CLI.hpp>

#include "model/model.h"

namespace qmlx {

void add_cpu_moe_flags(CLI::App& app, int& cpu_moe_layers) {
  CLI::Option* all = app.add_flag_callback(
      "--cpu-moe", [&cpu_moe_layers] { cpu_moe_layers = ModelLoadOptions::kAllLayers; },
      "With --device vulkan: keep every MoE layer's routed experts in host memory and run them "
      "on the CPU; the router, shared expert, attention, DeltaNet and LM head stay on the device. "
      "For a MoE model whose weights do not fit the GPU; each such layer costs one more "
      "submission per step. No effect with --device cpu");
  CLI::Option* first =
      app.add_option("--n-cpu-moe", cpu_moe_layers,
                     "With --device vulkan: as --cpu-moe for the first N layers only (N at or "
                     "above the number of layers: all of them). No effect with --device cpu")
          ->check(CLI::NonNegativeNumber);
  all->excludes(first);
}

}  // namespace qmlx
