// Splits an SSE byte stream into events, for tests: each event's name ("" when none), its
// data line (JSON text), or the comment text.
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace qmlx::server::testing {

struct SseEvent {
  std::string event;
  std::string data;
  std::string comment;
};

inline std::vector<SseEvent> parse_sse(const std::string& text) {
  std::vector<SseEvent> events;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find("\n\n", start);
    if (end == std::string::npos) end = text.size();
    SseEvent e;
    std::istringstream block(text.substr(start, end - start));
    std::string line;
    while (std::getline(block, line)) {
      if (line.rfind("event: ", 0) == 0)
        e.event = line.substr(7);
      else if (line.rfind("data: ", 0) == 0)
        e.data = line.substr(6);
      else if (line.rfind(": ", 0) == 0)
        e.comment = line.substr(2);
    }
    events.push_back(e);
    start = end + 2;
  }
  return events;
}

}  // namespace qmlx::server::testing
