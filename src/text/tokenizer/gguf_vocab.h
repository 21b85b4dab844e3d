// The tokenizer stored in a GGUF file (tokenizer.ggml.*: model "gpt2" byte-level BPE, the
// pre-tokenizer name, tokens, token types and merges) as the equivalent Hugging Face
// tokenizer.json object, so the one tokenizer implementation serves both kinds of model.
// Token types: 1 normal (BPE vocabulary), 3 control (special added token), 4 user-defined
// (non-special added token), 5 unused (padding rows, left out).
#pragma once

#include <nlohmann/json.hpp>

#include "model/gguf_file.h"

namespace qmlx {

// Throws qmlx::Error naming the file for a tokenizer model or pre-tokenizer it cannot express.
nlohmann::json tokenizer_json_from_gguf(const GgufFile& file);

}  // namespace qmlx
