#include "text/output/tool_call_ids.h"

#include <string_view>

namespace qmlx {
namespace {

constexpr std::string_view kAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
constexpr int kRandomChars = 24;

uint64_t fresh_seed() {
  std::random_device device;
  return (uint64_t{device()} << 32) ^ device();
}

}  // namespace

ToolCallIds::ToolCallIds(std::optional<uint64_t> seed) : random_(seed ? *seed : fresh_seed()) {}

std::string ToolCallIds::next() {
  std::string id = "call_";
  for (int i = 0; i < kRandomChars; ++i) id += kAlphabet[random_() % kAlphabet.size()];
  return id;
}

}  // namespace qmlx
