// Shared by the libFuzzer targets: what counts as a clean refusal, the input as a request
// body, and a scratch file for the readers that take a path (GGUF, safetensors).
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include <optional>

#include "server/common/request_fields.h"

namespace qmlx::fuzz {

// Runs one parse of untrusted input. A 4xx ApiError is the right answer to bad input; a 5xx
// (the server would answer 500 to a client's mistake) aborts, and so does any other exception
// (it escapes to libFuzzer, which reports it as a crash).
template <typename Fn>
bool refused_or_parsed(Fn fn) {
  try {
    fn();
    return true;
  } catch (const server::ApiError& e) {
    if (e.status() >= 500) std::abort();
    return false;
  }
}

// The fuzz input as a request body, as the routes read it: nullopt when parse_body refuses it.
inline std::optional<nlohmann::ordered_json> request_body(const uint8_t* data, size_t size) {
  std::optional<nlohmann::ordered_json> body;
  refused_or_parsed(
      [&] { body = server::parse_body(std::string(reinterpret_cast<const char*>(data), size)); });
  return body;
}

// `data` written to this process's own scratch file; returns its path.
inline std::string scratch_file(const uint8_t* data, size_t size, const char* suffix) {
  const char* dir = std::getenv("TMPDIR");
  std::string path =
      std::string(dir && *dir ? dir : "/tmp") + "/qmlx-fuzz-" + std::to_string(getpid()) + suffix;
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

}  // namespace qmlx::fuzz
