#include "server/common/api_error.h"

#include <nlohmann/json.hpp>

namespace qmlx::server {

std::string error_type(ApiStyle style, int status) {
  if (style == ApiStyle::kAnthropic) {
    switch (status) {
      case 401:
        return "authentication_error";
      case 403:
        return "permission_error";
      case 404:
        return "not_found_error";
      case 413:
        return "request_too_large";
      case 429:
        return "rate_limit_error";
      case 503:
      case 529:
        return "overloaded_error";
      default:
        return status >= 500 ? "api_error" : "invalid_request_error";
    }
  }
  switch (status) {
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 429:
      return "rate_limit_error";
    case 503:
      return "unavailable_error";
    default:
      return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

std::string error_body(ApiStyle style, int status, const std::string& message,
                       const std::string& param) {
  nlohmann::json body;
  if (style == ApiStyle::kAnthropic) {
    body = {{"type", "error"},
            {"error", {{"type", error_type(style, status)}, {"message", message}}}};
  } else {
    body = {{"error",
             {{"message", message},
              {"type", error_type(style, status)},
              {"param", param.empty() ? nlohmann::json(nullptr) : nlohmann::json(param)},
              {"code", status}}}};
  }
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace qmlx::server
