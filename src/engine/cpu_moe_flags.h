// --cpu-moe and --n-cpu-moe N, the flags that keep a MoE model's routed experts in host memory
// and run them on the CPU while the rest of the forward pass runs on a device (llama.cpp's flags
// of the same names). Shared by `qmlx serve` and `qmlx generate`, so both say the same (here,
// beside speculative_config.h, because `generate` alone links the engine, not the server).
#pragma once

namespace CLI {
class App;
}

namespace qmlx {

// Adds both flags to `app` (they exclude each other); parsing sets `cpu_moe_layers`
// (ModelLoadOptions::cpu_moe_layers): every layer for --cpu-moe, N for --n-cpu-moe N.
void add_cpu_moe_flags(CLI::App& app, int& cpu_moe_layers);

}  // namespace qmlx
