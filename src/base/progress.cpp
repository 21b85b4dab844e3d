#include "base/progress.h"

#include <algorithm>
#include <cmath>

#include "base/human_bytes.h"

namespace qmlx {
namespace {

constexpr int kBarWidth = 30;
constexpr std::chrono::milliseconds kRedrawInterval{100};

int percent(uint64_t done, uint64_t total) {
  if (total == 0 || done >= total) return 100;
  return int(double(done) * 100.0 / double(total));
}

std::string seconds_text(double seconds) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f s", seconds);
  return buffer;
}

}  // namespace

ProgressDisplay::ProgressDisplay(std::string label, ClockFn now)
    : label_(std::move(label)), now_(std::move(now)), start_(now_()) {}

ProgressDisplay ProgressDisplay::bar(std::string label, std::FILE* terminal, ClockFn now) {
  ProgressDisplay display(std::move(label), std::move(now));
  display.terminal_ = terminal;
  display.interval_ = kRedrawInterval;
  return display;
}

ProgressDisplay ProgressDisplay::lines(std::string label,
                                       std::function<void(const std::string&)> emit_line,
                                       std::chrono::milliseconds interval, ClockFn now) {
  ProgressDisplay display(std::move(label), std::move(now));
  display.emit_line_ = std::move(emit_line);
  display.interval_ = interval;
  return display;
}

double ProgressDisplay::seconds_since_start() const {
  return std::chrono::duration<double>(now_() - start_).count();
}

// ", 310.0 MiB/s, ETA 5 s" while running; empty until a rate is known.
std::string ProgressDisplay::rate_text(double seconds) const {
  if (seconds <= 0 || done_ == 0) return "";
  double rate = double(done_) / seconds;
  std::string text = ", " + human_bytes(uint64_t(rate)) + "/s";
  if (done_ < total_) {
    text += ", ETA " + std::to_string(int(std::ceil(double(total_ - done_) / rate))) + " s";
  }
  return text;
}

std::string ProgressDisplay::line_text() const {
  return label_ + ": " + std::to_string(percent(done_, total_)) + "% (" + human_bytes(done_) +
         " of " + human_bytes(total_) + rate_text(seconds_since_start()) + ")";
}

std::string ProgressDisplay::bar_text(const std::string& tail) const {
  int filled = percent(done_, total_) * kBarWidth / 100;
  std::string bar = std::string(size_t(filled), '#') + std::string(size_t(kBarWidth - filled), '.');
  char pct[8];
  std::snprintf(pct, sizeof pct, "%3d%%", percent(done_, total_));
  return label_ + " [" + bar + "] " + pct + " " + tail;
}

// "2.9 GiB in 9.4 s, 310.0 MiB/s": what the finished task took.
std::string ProgressDisplay::summary_text() const {
  double seconds = seconds_since_start();
  return human_bytes(total_) + " in " + seconds_text(seconds) + rate_text(seconds);
}

void ProgressDisplay::update(uint64_t done, uint64_t total) {
  done_ = done;
  total_ = total;
  auto now = now_();
  if (shown_ && now - last_shown_ < interval_) return;
  shown_ = true;
  last_shown_ = now;
  if (terminal_) {
    // Carriage return, the bar, then erase whatever a longer previous bar left behind.
    std::string tail =
        human_bytes(done_) + " / " + human_bytes(total_) + rate_text(seconds_since_start());
    std::fprintf(terminal_, "\r%s\x1b[K", bar_text(tail).c_str());
    std::fflush(terminal_);
  } else {
    emit_line_(line_text());
  }
}

void ProgressDisplay::finish() {
  done_ = total_;
  if (terminal_) {
    std::fprintf(terminal_, "\r%s\x1b[K\n", bar_text(summary_text()).c_str());
    std::fflush(terminal_);
  } else {
    emit_line_(label_ + ": 100% (" + summary_text() + ")");
  }
}

}  // namespace qmlx
