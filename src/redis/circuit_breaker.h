// CircuitBreaker: stops calling a tier that keeps failing. After `failures_to_open` failures in
// a row it opens: calls are refused at once (no connect, no timeout) for `cooldown`; then one
// trial call is let through, and its outcome closes the breaker or opens it for another
// cooldown. So a dead Redis node costs the first few requests a timeout each, not every request.
// Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>

namespace qmlx {

class CircuitBreaker {
 public:
  using Clock = std::chrono::steady_clock;

  CircuitBreaker(int failures_to_open, std::chrono::milliseconds cooldown)
      : failures_to_open_(failures_to_open), cooldown_(cooldown) {}

  // Whether a call may go ahead now (false while open; true once for the trial after cooldown).
  bool allow();
  // The outcome of a call that allow() let through.
  void record(bool ok);
  bool is_open() const;
  // How many times it has opened.
  uint64_t opens() const;

 private:
  mutable std::mutex mutex_;
  const int failures_to_open_;
  const std::chrono::milliseconds cooldown_;
  int consecutive_failures_ = 0;
  bool open_ = false;
  bool trial_in_flight_ = false;
  Clock::time_point opened_at_{};
  uint64_t opens_ = 0;
};

}  // namespace qmlx
