// Auth: the qMLX rule. Every route but /health needs a non-empty key, as
// `Authorization: Bearer KEY` or (on Anthropic routes) `x-api-key: KEY`. The key's value is
// checked only when the server was given --api-key, and then in constant time so response
// timing does not reveal how much of a guess was right.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace qmlx::server {

struct AuthHeaders {
  std::string authorization;  // the Authorization header, "" when absent
  std::string x_api_key;      // the x-api-key header, "" when absent
};

// nullopt when allowed; otherwise the message for a 401.
std::optional<std::string> check_auth(const AuthHeaders& headers, bool anthropic_route,
                                      const std::string& required_key);

bool constant_time_equals(std::string_view a, std::string_view b);

}  // namespace qmlx::server
