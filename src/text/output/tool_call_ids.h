// Ids for the tool calls of one reply ("call_" + 24 alphanumerics, the shape OpenAI clients
// expect). Seedable so tests and reproducible runs get the same ids every time.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>

namespace qmlx {

class ToolCallIds {
 public:
  // No seed: ids differ from run to run (seeded from std::random_device).
  explicit ToolCallIds(std::optional<uint64_t> seed);

  std::string next();

 private:
  std::mt19937_64 random_;
};

}  // namespace qmlx
