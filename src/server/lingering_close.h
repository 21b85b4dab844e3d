// Lingering close of an HTTP connection whose request body the server refused to read.
//
// When the server answers (413, say) before reading a declared body, the connection cannot carry
// another request: the unread bytes would be parsed as one. httplib 0.11 keeps it open anyway,
// and gives a handler no way to close it. Closing it outright loses the answer (the kernel sends
// a reset when unread data is pending), so we do what web servers call a lingering close: after
// the response is written, half-close (the client sees the end of the response), read and
// discard what the client is still uploading until it closes its side or a bound is reached,
// then close.
#pragma once

#include <chrono>

#include <httplib.h>

namespace qmlx::server {

// Whether `req` declared a body (Content-Length > 0) that was not read before answering.
bool request_body_left_unread(const httplib::Request& req);

// How long a lingering close keeps draining a client that does not close its side.
struct LingerLimits {
  std::chrono::milliseconds idle{2000};   // no byte for this long: give up
  std::chrono::milliseconds total{5000};  // at most this long in all (it delays shutdown)
};

// Runs on the connection's own thread, after the response to `req` is written (httplib's
// logger is called just there). Lingers, then leaves httplib a descriptor whose next read
// fails, so its keep-alive loop ends and closes it. Does nothing if the socket is not found.
void close_connection_after_response(const httplib::Request& req, LingerLimits limits = {});

}  // namespace qmlx::server
