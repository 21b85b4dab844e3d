// Process facts: resident and peak memory (from /proc), memory available to this process
// (cgroup-aware), and the user's qmlx folders.
#pragma once

#include <cstdint>
#include <string>

namespace qmlx {

uint64_t current_rss_bytes();
uint64_t peak_rss_bytes();
// min(MemAvailable, cgroup limit - cgroup usage); used by the cache's restore guard.
uint64_t available_memory_bytes();

// "~" and "~/..." expanded with $HOME.
std::string expand_user(const std::string& path);
// $QMLX_HOME or ~/.qmlx: where the demo model and default cache live.
std::string qmlx_home();

}  // namespace qmlx
