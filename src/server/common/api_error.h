// ApiError: a failure that a client must see, with the HTTP status and the field at fault.
// It is thrown anywhere in request handling and turned into the error body of the route's
// own API (OpenAI or Anthropic), so clients' SDKs raise their usual exception types.
#pragma once

#include <stdexcept>
#include <string>

namespace qmlx::server {

enum class ApiStyle { kOpenAI, kAnthropic };

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string message, std::string param = "")
      : std::runtime_error(message), status_(status), param_(std::move(param)) {}
  // The end of a generation job the scheduler already logs in the request's one line (a client
  // that left: 499; a server stop: 503; a failed generation): the route does not log it again.
  static ApiError of_logged_job(int status, std::string message) {
    ApiError e(status, std::move(message));
    e.logged_by_job_ = true;
    return e;
  }
  int status() const { return status_; }
  // The request field at fault (OpenAI's `param`), empty when none.
  const std::string& param() const { return param_; }
  bool logged_by_job() const { return logged_by_job_; }

 private:
  int status_;
  std::string param_;
  bool logged_by_job_ = false;
};

// The `type` string each API uses for a status (e.g. 401 -> "authentication_error").
std::string error_type(ApiStyle style, int status);

// The JSON error body: OpenAI {"error": {message, type, param, code}}, Anthropic
// {"type": "error", "error": {type, message}}.
std::string error_body(ApiStyle style, int status, const std::string& message,
                       const std::string& param = "");

}  // namespace qmlx::server
