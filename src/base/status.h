// Status: an explicit result for operations that can fail in ordinary ways (I/O, parsing of
// untrusted bytes), in the LevelDB style: cheap when OK, carries a code and a message otherwise.
#pragma once

#include <string>
#include <utility>

namespace qmlx {

class Status {
 public:
  enum class Code { kOk, kNotFound, kCorruption, kIOError, kNoSpace, kInvalidArgument };

  Status() = default;
  static Status Ok() { return Status(); }
  static Status NotFound(std::string m) { return Status(Code::kNotFound, std::move(m)); }
  static Status Corruption(std::string m) { return Status(Code::kCorruption, std::move(m)); }
  static Status IOError(std::string m) { return Status(Code::kIOError, std::move(m)); }
  static Status NoSpace(std::string m) { return Status(Code::kNoSpace, std::move(m)); }
  static Status InvalidArgument(std::string m) {
    return Status(Code::kInvalidArgument, std::move(m));
  }

  // The same status carrying the errno of the system call that failed (file-system faults are
  // told apart by it: read-only, not a directory, ...).
  Status with_errno(int err) && {
    errno_ = err;
    return std::move(*this);
  }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  // The errno behind an I/O failure, 0 when none was recorded.
  int sys_errno() const { return errno_; }
  const std::string& message() const { return message_; }
  std::string ToString() const;

 private:
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}
  Code code_ = Code::kOk;
  std::string message_;
  int errno_ = 0;
};

}  // namespace qmlx
