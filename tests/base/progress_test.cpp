// ProgressDisplay: the plain lines a log gets (when, and what they say) and the bar a terminal
// gets, driven by a fake clock.
#include "base/progress.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace qmlx {
namespace {

using namespace std::chrono_literals;
constexpr uint64_t kMiB = uint64_t(1) << 20;

class FakeClock {
 public:
  ProgressDisplay::ClockFn fn() {
    return [this] { return ProgressDisplay::Clock::time_point(elapsed_); };
  }
  void set(std::chrono::milliseconds t) { elapsed_ = t; }

 private:
  std::chrono::milliseconds elapsed_{0};
};

TEST(ProgressDisplayTest, LinesComeFirstThenEveryIntervalThenAtTheEnd) {
  FakeClock clock;
  std::vector<std::string> lines;
  auto display = ProgressDisplay::lines(
      "loading weights", [&](const std::string& line) { lines.push_back(line); }, 2s, clock.fn());
  display.update(0, 10 * kMiB);
  clock.set(500ms);
  display.update(1 * kMiB, 10 * kMiB);  // within the interval: quiet
  clock.set(2000ms);
  display.update(4 * kMiB, 10 * kMiB);  // 4 MiB in 2 s: 2 MiB/s, 6 MiB left: 3 s
  clock.set(3000ms);
  display.update(5 * kMiB, 10 * kMiB);  // quiet again
  clock.set(5000ms);
  display.finish();
  EXPECT_EQ(lines, (std::vector<std::string>{
                       "loading weights: 0% (0 B of 10.0 MiB)",
                       "loading weights: 40% (4.0 MiB of 10.0 MiB, 2.0 MiB/s, ETA 3 s)",
                       "loading weights: 100% (10.0 MiB in 5.0 s, 2.0 MiB/s)",
                   }));
}

TEST(ProgressDisplayTest, PercentRoundsDownAndAnEmptyTaskIsDone) {
  FakeClock clock;
  std::vector<std::string> lines;
  auto display = ProgressDisplay::lines(
      "x", [&](const std::string& line) { lines.push_back(line); }, 0ms, clock.fn());
  display.update(999, 1000);
  display.update(0, 0);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "x: 99% (999 B of 1000 B)");
  EXPECT_EQ(lines[1], "x: 100% (0 B of 0 B)");
}

TEST(ProgressDisplayTest, BarIsRedrawnInPlaceAndEndsWithANewline) {
  FakeClock clock;
  char* text = nullptr;
  size_t size = 0;
  std::FILE* terminal = open_memstream(&text, &size);
  ASSERT_NE(terminal, nullptr);
  auto display = ProgressDisplay::bar("loading weights", terminal, clock.fn());
  display.update(0, 4 * kMiB);
  clock.set(50ms);
  display.update(1 * kMiB, 4 * kMiB);  // under the redraw interval: not drawn
  clock.set(1000ms);
  display.update(2 * kMiB, 4 * kMiB);
  clock.set(2000ms);
  display.finish();
  std::fclose(terminal);
  std::string drawn(text, size);
  std::free(text);
  const std::string erase = "\x1b[K";
  EXPECT_EQ(drawn, "\rloading weights [..............................]   0% 0 B / 4.0 MiB" + erase +
                       "\rloading weights [###############...............]  50% 2.0 MiB / 4.0 MiB, "
                       "2.0 MiB/s, ETA 1 s" +
                       erase +
                       "\rloading weights [##############################] 100% 4.0 MiB in 2.0 s, "
                       "2.0 MiB/s" +
                       erase + "\n");
}

}  // namespace
}  // namespace qmlx
