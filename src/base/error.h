// Error: the exception type for failures a user must read (bad model files, bad
// configuration, bad input). The message names the file, tensor or field at fault.
// I/O on the cache path uses Status (status.h) instead, so callers decide what to do.
#pragma once

#include <stdexcept>
#include <string>

namespace qmlx {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// The compute device cannot do the work now: it was lost, did not finish in time, or ran out of
// memory. Nothing is wrong with the request: the server answers 503 (retry), not 500.
class DeviceUnavailable : public Error {
 public:
  using Error::Error;
};

}  // namespace qmlx
