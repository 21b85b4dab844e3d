// The Responses API's `reasoning.encrypted_content`, as qmlx fills it: not encrypted, but a
// versioned, byte-exact wrapping of the reasoning text ("qmlx-reasoning-v1:" + base64). A client
// that sends the reasoning item back gets the very same text into the template, so the next
// turn renders the same prompt tokens and stays a prefix of the cache. Base64 keeps any bytes
// the model produced (even a cut UTF-8 sequence) intact through JSON.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace qmlx::server {

std::string seal_reasoning(std::string_view reasoning);

// The reasoning text, or nullopt when `sealed` is not a qmlx envelope (another server's
// encrypted reasoning) or is damaged.
std::optional<std::string> open_reasoning(std::string_view sealed);

}  // namespace qmlx::server
