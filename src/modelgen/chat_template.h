// The chat template a generated model ships in tokenizer_config.json. The text of
// share/templates/<arch>.jinja is embedded at build time (qwen3_5.jinja serves both
// Qwen3.5 variants); when that file was missing at build time a minimal ChatML template
// stands in, so a generated model always has a usable template.
#pragma once

#include <string>

#include "modelgen/model_options.h"

namespace qmlx::modelgen {

// "qwen3_5", "qwen3_next" or "qwen3": the share/templates file name for `arch`.
const char* template_name(Arch arch);
std::string chat_template_for(Arch arch);
// True when share/templates/<name>.jinja was absent at build time.
bool chat_template_is_fallback(Arch arch);

}  // namespace qmlx::modelgen
