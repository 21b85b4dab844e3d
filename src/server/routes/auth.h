// Auth: the qMLX rule. Every route but /health needs a non-empty key, as
// `Authorization: Bearer KEY` or (on Anthropic routes) `x-api-key: KEY`. The key's value is
// checked only when the server was given --api-key, and then in constant time so response
// timing does not reveal how much of a guess was right. Without --api-key on a non-loopback
// --host, the admin routes are closed (403).
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

// Whether `host` (a --host value) only accepts connections from this machine.
bool is_loopback_host(std::string_view host);

// Without --api-key, a server on a non-loopback address accepts any key from anyone who can
// reach it: the model routes stay open (that is the qMLX contract), the admin routes that can
// delete the cache do not.
bool admin_routes_closed(std::string_view host, const std::string& api_key);

}  // namespace qmlx::server
