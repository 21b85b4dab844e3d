// Writes a Response to a socket: a whole body with its Content-Length, or a stream through a
// DataSink (chunked over HTTP/1.1; over HTTP/1.0, which has no chunked coding, the body runs
// until the connection closes). `Connection: close` is written once, when the server closes.
#pragma once

#include <chrono>

#include "http/message.h"

namespace qmlx::http {

struct WriteOptions {
  bool http10 = false;
  bool close_after = false;  // the server closes the connection after this response
  std::chrono::milliseconds timeout{600'000};  // for each write to make progress
};

// Returns false when the client went away or a streamed body was aborted: the connection
// must then close. Calls the response's content_provider_releaser, if any, either way.
bool write_response(int fd, Response& response, const WriteOptions& options);

}  // namespace qmlx::http
