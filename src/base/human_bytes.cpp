#include "base/human_bytes.h"

#include <cstdio>

namespace qmlx {

std::string human_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = double(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), unit ? "%.1f %s" : "%.0f %s", value, units[unit]);
  return buffer;
}

}  // namespace qmlx
