// Elapsed time for stage timings (lookup, read, verify, install, write): seconds on the steady
// clock, which never jumps with the wall clock, since a point taken with SteadyClock::now().
#pragma once

#include <chrono>

namespace qmlx {

using SteadyClock = std::chrono::steady_clock;

inline double seconds_since(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

}  // namespace qmlx
