#include "grammar/canonical_json.h"

#include <cmath>

namespace qmlx::grammar {
namespace {

nlohmann::ordered_json canonicalized(const nlohmann::ordered_json& v) {
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15)
      return static_cast<int64_t>(d);
    return v;
  }
  if (v.is_array()) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto& e : v) out.push_back(canonicalized(e));
    return out;
  }
  if (v.is_object()) {
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    for (const auto& [k, e] : v.items()) out[k] = canonicalized(e);
    return out;
  }
  return v;
}

}  // namespace

std::string canonical_json(const nlohmann::ordered_json& value) {
  return canonicalized(value).dump(-1, ' ', false,
                                   nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace qmlx::grammar
