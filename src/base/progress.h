// ProgressDisplay: shows how far a long task measured in bytes has got (loading model weights).
// On a terminal it redraws one bar line in place; anywhere else (a log file, a pipe, a service
// manager) a bar would be noise, so it hands a plain line to a sink (the log) every few seconds.
// Time comes from a clock function, so tests drive it without waiting.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

namespace qmlx {

class ProgressDisplay {
 public:
  using Clock = std::chrono::steady_clock;
  using ClockFn = std::function<Clock::time_point()>;

  // Redraws a bar in place on `terminal` (a stream that is a TTY), at most every 100 ms.
  static ProgressDisplay bar(std::string label, std::FILE* terminal, ClockFn now = Clock::now);
  // Hands `emit_line` a plain line on the first update, then at most every `interval`.
  static ProgressDisplay lines(std::string label, std::function<void(const std::string&)> emit_line,
                               std::chrono::milliseconds interval, ClockFn now = Clock::now);

  // `done` of `total` bytes; `done` is expected not to decrease.
  void update(uint64_t done, uint64_t total);
  // The last state, always shown: the full bar and its newline, or a closing line.
  void finish();

 private:
  ProgressDisplay(std::string label, ClockFn now);
  std::string bar_text(const std::string& tail) const;
  std::string line_text() const;
  std::string summary_text() const;
  std::string rate_text(double seconds) const;
  double seconds_since_start() const;

  std::string label_;
  ClockFn now_;
  std::FILE* terminal_ = nullptr;
  std::function<void(const std::string&)> emit_line_;
  std::chrono::milliseconds interval_{0};
  Clock::time_point start_;
  Clock::time_point last_shown_;
  bool shown_ = false;
  uint64_t done_ = 0;
  uint64_t total_ = 0;
};

}  // namespace qmlx
