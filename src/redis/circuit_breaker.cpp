#include "redis/circuit_breaker.h"

namespace qmlx {

bool CircuitBreaker::allow() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!open_) return true;
  if (trial_in_flight_ || Clock::now() - opened_at_ < cooldown_) return false;
  trial_in_flight_ = true;
  return true;
}

void CircuitBreaker::record(bool ok) {
  std::lock_guard<std::mutex> lock(mutex_);
  trial_in_flight_ = false;
  if (ok) {
    consecutive_failures_ = 0;
    open_ = false;
    return;
  }
  ++consecutive_failures_;
  if (open_ || consecutive_failures_ >= failures_to_open_) {
    if (!open_) ++opens_;
    open_ = true;
    opened_at_ = Clock::now();
  }
}

bool CircuitBreaker::is_open() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return open_;
}

uint64_t CircuitBreaker::opens() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return opens_;
}

}  // namespace qmlx
