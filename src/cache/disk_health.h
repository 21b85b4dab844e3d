// DiskHealth: how the disk tier is doing, for the operator. A fault in the cache folder (full,
// read-only, deleted, replaced by a file, failing) never escapes as an exception: the write is
// skipped or the read is a miss, and the fault is counted by kind (qmlx_disk_cache_errors_total).
// So that a lasting or flapping fault (a nearly full disk where each eviction lets a few writes
// through) does not flood the log, each kind is logged at most once per quiet period; the first
// successful write after a logged fault logs the recovery.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "base/status.h"
#include "cache/metrics.h"

namespace qmlx {

// The kind of a failed file operation: no_space, read_only, permission, missing,
// not_a_directory or io.
const char* disk_fault_kind(const Status& status);

class DiskHealth {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds kQuietPeriod{60};

  explicit DiskHealth(CacheMetrics& metrics) : metrics_(metrics) {}

  // Counts a failed operation (`what`: "checkpoint write", "read", ...), logging it unless its
  // kind was logged within the quiet period.
  void fault(const Status& status, const std::string& what);
  // A write succeeded: ends the episode, with one log line when its fault was logged.
  void ok();

 private:
  CacheMetrics& metrics_;
  std::mutex mutex_;
  std::map<std::string, Clock::time_point> last_logged_;  // by kind
  std::set<std::string> kinds_;  // the kinds of the current episode; empty when healthy
  uint64_t errors_ = 0;
  bool episode_logged_ = false;
};

}  // namespace qmlx
