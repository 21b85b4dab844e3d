#include "base/status.h"

namespace qmlx {

std::string Status::ToString() const {
  switch (code_) {
    case Code::kOk:
      return "OK";
    case Code::kNotFound:
      return "not found: " + message_;
    case Code::kCorruption:
      return "corruption: " + message_;
    case Code::kIOError:
      return "I/O error: " + message_;
    case Code::kNoSpace:
      return "no space: " + message_;
    case Code::kInvalidArgument:
      return "invalid argument: " + message_;
  }
  return message_;
}

}  // namespace qmlx
