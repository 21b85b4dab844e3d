// Small socket helpers for the HTTP server: writes with a deadline on non-blocking sockets,
// a check for a peer that has gone, and the textual address of a peer.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace qmlx::http {

// Writes all of `data`, waiting for room up to `timeout` in all. False on error or timeout.
bool send_all(int fd, const char* data, size_t size, std::chrono::milliseconds timeout);

// True when the peer closed or reset the connection (bytes still unread, e.g. a pipelined
// request, do not count as closed). Does not block.
bool peer_closed(int fd);

// The peer's numeric address ("127.0.0.1", "::1") and port, or {"unknown", -1}.
std::pair<std::string, int> peer_address(int fd);

}  // namespace qmlx::http
