// Base64 (RFC 4648, standard alphabet, padded): how opaque values that must come back byte for
// byte travel through JSON, e.g. a reply's reasoning carried in an Anthropic thinking block's
// `signature` so that a client that hides it still sends it back unchanged.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace qmlx {

std::string base64_encode(std::string_view bytes);

// The decoded bytes, or nullopt when `text` is not valid padded base64.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace qmlx
