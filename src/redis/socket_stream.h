// SocketStream: a ByteStream over a connected TCP (or any stream) socket. connect() resolves
// the host, connects without blocking past the timeout (non-blocking connect + poll), turns off
// Nagle (TCP_NODELAY: a pipelined command must not wait for the previous reply's ACK) and sets
// the timeout on every later read and write (SO_RCVTIMEO / SO_SNDTIMEO). Writes go out with
// sendmsg from the caller's pieces (no SIGPIPE: a peer that hung up is an error, not a signal).
#pragma once

#include <memory>
#include <string>

#include "redis/byte_stream.h"

namespace qmlx {

class SocketStream final : public ByteStream {
 public:
  // Takes ownership of a connected socket.
  explicit SocketStream(int fd) : fd_(fd) {}
  ~SocketStream() override;
  SocketStream(const SocketStream&) = delete;
  SocketStream& operator=(const SocketStream&) = delete;

  static Status connect(const std::string& host, int port, int timeout_ms,
                        std::unique_ptr<SocketStream>* out);

  Status write_all(std::span<const std::string_view> pieces) override;
  Status read_some(std::span<uint8_t> out, size_t* got) override;
  int fd() const { return fd_; }

 private:
  int fd_;
};

// The error of a failed socket call (errno): "<what> timed out" for EAGAIN, else strerror.
Status socket_error(const char* what);

}  // namespace qmlx
