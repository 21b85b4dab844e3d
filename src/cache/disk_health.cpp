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

void DiskHealth::fault(const Status& status, const std::string& what) {
  const std::string kind = disk_fault_kind(status);
  metrics_.count_disk_error(kind);
  std::lock_guard<std::mutex> lock(mutex_);
  ++errors_;
  kinds_.insert(kind);
  const Clock::time_point now = Clock::now();
  auto logged = last_logged_.find(kind);
  if (logged != last_logged_.end() && now - logged->second < kQuietPeriod) return;
  last_logged_[kind] = now;
  episode_logged_ = true;
  log_warn("cache: disk tier fault kind=" + kind + " on " + what + ": " + status.ToString() +
           " (requests go on without it; counted in qmlx_disk_cache_errors_total)");
}

void DiskHealth::ok() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (kinds_.empty()) return;
  if (episode_logged_) {
    std::string kinds;
    for (const std::string& kind : kinds_) kinds += (kinds.empty() ? "" : ",") + kind;
    log_info("cache: disk tier recovered from kind=" + kinds + " after " + std::to_string(errors_) +
             " errors");
  }
  kinds_.clear();
  errors_ = 0;
  episode_logged_ = false;
}

}  // namespace qmlx
