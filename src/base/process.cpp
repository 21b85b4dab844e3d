#include "base/process.h"

#include <malloc.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace qmlx {
namespace {

uint64_t status_kb(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string prefix = std::string(key) + ":";
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) {
      std::istringstream s(line.substr(prefix.size()));
      uint64_t kb = 0;
      s >> kb;
      return kb * 1024;
    }
  }
  return 0;
}

bool read_u64(const std::string& path, uint64_t* out) {
  std::ifstream in(path);
  std::string s;
  if (!(in >> s) || s == "max") return false;
  *out = std::strtoull(s.c_str(), nullptr, 10);
  return true;
}

}  // namespace

uint64_t current_rss_bytes() { return status_kb("VmRSS"); }
uint64_t peak_rss_bytes() { return status_kb("VmHWM"); }

uint64_t available_memory_bytes() {
  uint64_t avail = 0;
  {
    std::ifstream in("/proc/meminfo");
    std::string key;
    uint64_t kb;
    std::string unit;
    while (in >> key >> kb) {
      std::getline(in, unit);
      if (key == "MemAvailable:") {
        avail = kb * 1024;
        break;
      }
    }
  }
  uint64_t limit = 0, usage = 0;
  if (read_u64("/sys/fs/cgroup/memory.max", &limit) &&
      read_u64("/sys/fs/cgroup/memory.current", &usage)) {
    uint64_t cg = limit > usage ? limit - usage : 0;
    if (avail == 0 || cg < avail) avail = cg;
  }
  return avail;
}

std::string expand_user(const std::string& path) {
  if (path.empty() || path[0] != '~') return path;
  if (path.size() > 1 && path[1] != '/') return path;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "") + path.substr(1);
}

std::string qmlx_home() {
  const char* env = std::getenv("QMLX_HOME");
  if (env != nullptr && *env != '\0') return env;
  return expand_user("~/.qmlx");
}

void keep_large_buffers_for_reuse() {
  static const bool done = [] {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    return true;
  }();
  (void)done;
}

}  // namespace qmlx
