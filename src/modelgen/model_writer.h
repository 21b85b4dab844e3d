// Writes a complete model folder: config.json, generation_config.json, tokenizer.json,
// tokenizer_config.json and the safetensors weights, in the layout the options ask for.
// This is what `qmlx make-model` and the demo model call.
#pragma once

#include <string>

#include "modelgen/logical_model.h"
#include "modelgen/model_options.h"
#include "modelgen/tokenizer_files.h"

namespace qmlx::modelgen {

// Random weights from options.seed, the demo vocabulary and the arch's chat template.
void write_random_model(const ModelOptions& options, const std::string& out_dir);

// Any weights and vocabulary (the scripted fixture model uses this).
void write_model_folder(const ModelOptions& options, const LogicalModel& weights,
                        const Vocabulary& vocabulary, const std::string& chat_template,
                        const std::string& out_dir);

}  // namespace qmlx::modelgen
