// Canonical JSON: the one serialisation constrained output uses where JSON leaves a choice:
// no whitespace, object members in the order held, strings escaped as nlohmann::json escapes
// them (\" \\ \b \f \n \r \t, other controls as \u00xx, everything else raw UTF-8), and
// integral floats (1.0) written as integers (1), since JSON Schema treats them as equal.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace qmlx::grammar {

std::string canonical_json(const nlohmann::ordered_json& value);

}  // namespace qmlx::grammar
