// Shared helpers for building tokenizer components from their tokenizer.json objects, so every
// component reports a missing or unknown "type" the same way (naming the file).
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "base/error.h"

namespace qmlx {

// The "type" field of a component object; throws qmlx::Error if it is absent.
std::string component_type(const nlohmann::json& spec, const std::string& kind,
                           const std::string& context);

Error unsupported_component(const std::string& kind, const std::string& type,
                            const std::string& context);

}  // namespace qmlx
