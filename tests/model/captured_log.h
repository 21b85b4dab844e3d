// What a piece of code logs, for tests of the one-line warnings the optional parts promise
// (a tower or an MTP head dropped at load).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

namespace qmlx::testing {

// The lines `f` wrote to stderr (the log's destination in tests).
inline std::vector<std::string> stderr_lines(const std::function<void()>& f) {
  ::testing::internal::CaptureStderr();
  f();
  std::vector<std::string> lines;
  std::string text = ::testing::internal::GetCapturedStderr(), line;
  for (char ch : text) {
    if (ch != '\n') {
      line += ch;
    } else {
      lines.push_back(line);
      line.clear();
    }
  }
  return lines;
}

// Those of `lines` that contain `s` (" warn ": the warnings).
inline std::vector<std::string> lines_containing(const std::vector<std::string>& lines,
                                                 const std::string& s) {
  std::vector<std::string> out;
  for (const std::string& line : lines)
    if (line.find(s) != std::string::npos) out.push_back(line);
  return out;
}

}  // namespace qmlx::testing
