// RequestOrigin: who sent a request and which conversation it continues, for the status page.
// The conversation is the agent's own session id when it sends one (the headers the fleet's
// nginx config hashes on); without one, the rule below keeps apart what an agent runs in
// parallel.
#pragma once

#include <functional>
#include <string>

#include "server/common/generation_request.h"

namespace qmlx::server {

struct RequestOrigin {
  std::string client;        // the User-Agent, cut to a bounded length ("" when absent)
  std::string session;       // the agent's session id header ("" when it sends none)
  std::string conversation;  // the conversation's key: the session id, or "auto-<hex>"
};

// The headers that carry an agent's session id, as the agents send them (checked on the pinned
// releases in tests/agents; deploy/nginx/qmlx-fleet.conf hashes on the same ones).
inline constexpr const char* kSessionHeaders[] = {"X-Claude-Code-Session-Id", "session-id",
                                                  "x-session-affinity", "x-session-id"};

using HeaderLookup = std::function<std::string(const char* name)>;

// The origin of a parsed generation request. Without a session header the conversation is
// "auto-" + a hash of the user agent and the request's first user message (for
// /v1/completions, the prompt's first 512 bytes): the turns of one conversation keep their
// first message, while sub-agents started in parallel each get their own task as theirs, so
// they stay apart. Two conversations that open with the same message from the same client are
// one conversation to the page.
RequestOrigin request_origin(const HeaderLookup& header, const GenerationRequest& request);

// The origin of a request rejected before it was parsed: client and session only.
RequestOrigin header_origin(const HeaderLookup& header);

}  // namespace qmlx::server
