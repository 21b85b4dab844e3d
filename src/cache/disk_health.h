// DiskHealth: how the disk tier is doing, for the operator. A fault in the cache folder (full,
// read-only, deleted, replaced by a file, failing) never escapes as an exception: the write is
// skipped or the read is a miss, and the fault is counted by kind (qmlx_disk_cache_errors_total).
// So that a fault that lasts does not flood the log, only the first error of an episode (or a
// change of kind) is logged, and the first success after it logs the recovery.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "base/status.h"
#include "cache/metrics.h"

namespace qmlx {

// The kind of a failed file operation: no_space, read_only, permission, missing,
// not_a_directory or io.
const char* disk_fault_kind(const Status& status);

class DiskHealth {
 public:
  explicit DiskHealth(CacheMetrics& metrics) : metrics_(metrics) {}

  // Counts a failed operation (`what`: "write", "read", ...) and logs it when it starts an
  // episode. Returns its kind.
  std::string fault(const Status& status, const std::string& what);
  // An operation succeeded: ends the episode, if any, with one log line.
  void ok();
  bool faulted() const;

 private:
  CacheMetrics& metrics_;
  mutable std::mutex mutex_;
  std::string kind_;  // the current episode's kind, "" when healthy
  uint64_t errors_ = 0;
};

}  // namespace qmlx
