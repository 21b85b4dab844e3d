// The OpenAI chat completions and legacy completions request bodies, parsed into a
// GenerationRequest (or ApiError(400) naming the field): messages and tools normalised to the
// shape Hugging Face chat templates expect (images read with `images`: image_parts.h),
// tool_choice, logprobs, streaming options.
#pragma once

#include <nlohmann/json.hpp>

#include "server/common/generation_request.h"
#include "server/common/image_reading.h"
#include "server/config/options.h"

namespace qmlx::server {

GenerationRequest parse_chat_request(const nlohmann::ordered_json& body,
                                     const SamplingDefaults& defaults,
                                     const ImageReading& images = ImageReading());
GenerationRequest parse_completion_request(const nlohmann::ordered_json& body,
                                           const SamplingDefaults& defaults);

}  // namespace qmlx::server
