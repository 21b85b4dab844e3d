#include "cache/disk_health.h"

#include <cerrno>

#include "base/logging.h"

namespace qmlx {

const char* disk_fault_kind(const Status& status) {
  if (status.code() == Status::Code::kNoSpace) return "no_space";
  switch (status.sys_errno()) {
    case EROFS:
      return "read_only";
    case EACCES:
    case EPERM:
      return "permission";
    case ENOTDIR:
    case EISDIR:
      return "not_a_directory";
    case ENOENT:
      return "missing";
    default:
      break;
  }
  return status.code() == Status::Code::kNotFound ? "missing" : "io";
}

std::string DiskHealth::fault(const Status& status, const std::string& what) {
  const std::string kind = disk_fault_kind(status);
  metrics_.count_disk_error(kind);
  std::lock_guard<std::mutex> lock(mutex_);
  ++errors_;
  if (kind_ != kind) {
    log_warn("cache: disk tier fault kind=" + kind + " on " + what + ": " + status.ToString() +
             " (requests go on; checkpoints are skipped until it clears)");
    kind_ = kind;
  }
  return kind;
}

void DiskHealth::ok() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (kind_.empty()) return;
  log_info("cache: disk tier recovered from kind=" + kind_ + " after " + std::to_string(errors_) +
           " errors");
  kind_.clear();
  errors_ = 0;
}

bool DiskHealth::faulted() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !kind_.empty();
}

}  // namespace qmlx
