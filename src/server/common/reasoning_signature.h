// The reasoning of a reply, carried in an opaque field that clients send back verbatim: an
// Anthropic thinking block's `signature` (the OpenAI Responses API's encrypted_content plays
// the same part). A client that hides or drops the reasoning text still returns this value,
// so the next turn renders exactly the tokens this server generated and stays a cache prefix.
// It is not encrypted: it is the reasoning itself, versioned, and anyone may read it.
#pragma once

#include <optional>
#include <string>

namespace qmlx::server {

std::string reasoning_signature(const std::string& reasoning);

// The reasoning in a value made by reasoning_signature; nullopt for any other value (another
// server's signature, a truncated one).
std::optional<std::string> reasoning_from_signature(const std::string& signature);

}  // namespace qmlx::server
