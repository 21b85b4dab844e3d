// Loads a model folder into a ModelRuntime: the engine's Model and Sessions, the sampler, the
// tokenizer, the chat template and the tool-call format. This file is the only one in the
// server that knows the engine and text layers' concrete types.
#pragma once

#include <memory>
#include <string>

#include "server/config/options.h"
#include "server/scheduling/model_runtime.h"

namespace qmlx::server {

// Throws qmlx::Error naming the file at fault. Contradictions between the qMLX flags
// (--hybrid-attention, deltanet_state_aware) and the detected architecture are logged as
// warnings. Logs a line per loading stage.
std::shared_ptr<ModelRuntime> load_model_runtime(const std::string& model_dir,
                                                 const ServerOptions& options);

// The engine's sampler behind the server's TokenSampler interface; ids above max_token_id
// (embedding padding rows) are never chosen.
std::unique_ptr<TokenSampler> make_engine_sampler(const SamplingParams& params, uint64_t seed,
                                                  int32_t max_token_id);

}  // namespace qmlx::server
