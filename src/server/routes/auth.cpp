#include "server/routes/auth.h"

#include <cctype>

namespace qmlx::server {
namespace {

std::string bearer_token(const std::string& authorization) {
  constexpr std::string_view kScheme = "bearer ";
  if (authorization.size() < kScheme.size()) return "";
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != kScheme[i]) return "";
  }
  size_t begin = authorization.find_first_not_of(' ', kScheme.size());
  if (begin == std::string::npos) return "";
  size_t end = authorization.find_last_not_of(" \t");
  return authorization.substr(begin, end + 1 - begin);
}

}  // namespace

bool constant_time_equals(std::string_view a, std::string_view b) {
  // Compare over the longer length so neither the length nor the first difference leaks.
  size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= x ^ y;
  }
  return diff == 0;
}

std::optional<std::string> check_auth(const AuthHeaders& headers, bool anthropic_route,
                                      const std::string& required_key) {
  std::string key = bearer_token(headers.authorization);
  if (key.empty() && anthropic_route) key = headers.x_api_key;
  if (key.empty()) {
    return anthropic_route ? "missing API key: send x-api-key or Authorization: Bearer"
                           : "missing API key: send Authorization: Bearer <key>";
  }
  if (!required_key.empty() && !constant_time_equals(key, required_key)) {
    return "invalid API key";
  }
  return std::nullopt;
}

bool is_loopback_host(std::string_view host) {
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

bool admin_routes_closed(std::string_view host, const std::string& api_key) {
  return api_key.empty() && !is_loopback_host(host);
}

}  // namespace qmlx::server
