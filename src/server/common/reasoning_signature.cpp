#include "server/common/reasoning_signature.h"

#include "base/base64.h"

namespace qmlx::server {
namespace {

// The version tag: a change of encoding gets a new tag, and old values stop decoding cleanly.
constexpr std::string_view kPrefix = "qmlx-reasoning-v1:";

}  // namespace

std::string reasoning_signature(const std::string& reasoning) {
  return std::string(kPrefix) + base64_encode(reasoning);
}

std::optional<std::string> reasoning_from_signature(const std::string& signature) {
  if (signature.rfind(kPrefix, 0) != 0) return std::nullopt;
  return base64_decode(std::string_view(signature).substr(kPrefix.size()));
}

}  // namespace qmlx::server
