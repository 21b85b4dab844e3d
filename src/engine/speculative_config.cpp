#include "engine/speculative_config.h"

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "engine/speculative_step.h"

namespace qmlx {
namespace {

int checked_draft_tokens(long long k, const std::string& where) {
  if (k < 1 || k > kMaxDraftTokens)
    throw Error(where + ": " + std::to_string(k) + " draft tokens; give 1 to " +
                std::to_string(kMaxDraftTokens));
  return int(k);
}

}  // namespace

int parse_speculative_flag(const std::string& value) {
  const std::string usage = "--speculative must be mtp, mtp:K (K = 1.." +
                            std::to_string(kMaxDraftTokens) + " draft tokens) or off, not '" +
                            value + "'";
  if (value == "off" || value == "none") return 0;
  if (value == "mtp") return 1;
  if (value.rfind("mtp:", 0) != 0) throw Error(usage);
  const std::string k = value.substr(4);
  if (k.empty() || k.size() > 2 || k.find_first_not_of("0123456789") != std::string::npos)
    throw Error(usage);
  return checked_draft_tokens(std::stoll(k), "--speculative");
}

int parse_speculative_config(const std::string& json) {
  const std::string where = "--speculative-config";
  const nlohmann::json config = nlohmann::json::parse(json, nullptr, false);
  if (config.is_discarded() || !config.is_object())
    throw Error(where +
                " must be a JSON object such as {\"method\":\"mtp\","
                "\"num_speculative_tokens\":2}, not '" +
                json + "'");
  for (const auto& [key, value] : config.items())
    if (key != "method" && key != "num_speculative_tokens")
      throw Error(where + ": unknown key '" + key +
                  "' (qmlx reads method and num_speculative_tokens)");
  const auto method = config.find("method");
  if (method == config.end() || !method->is_string() || *method != "mtp")
    throw Error(where +
                ": \"method\" must be \"mtp\" (the model's multi-token-prediction head; "
                "qmlx has no other draft method)");
  const auto k = config.find("num_speculative_tokens");
  if (k == config.end()) return 1;
  if (!k->is_number_integer()) throw Error(where + ": num_speculative_tokens must be an integer");
  return checked_draft_tokens(k->get<long long>(), where);
}

double speculative_reject_probability_from_env() {
  const char* value = std::getenv("QMLX_SPECULATIVE_REJECT");
  if (!value || !*value) return 0;
  char* end = nullptr;
  const double p = std::strtod(value, &end);
  if (*end != '\0' || !(p >= 0 && p <= 1))
    throw Error(std::string("QMLX_SPECULATIVE_REJECT must be a probability in [0, 1], not '") +
                value + "'");
  return p;
}

}  // namespace qmlx
