// ByteStream: the connected, blocking byte stream the Redis client speaks RESP over, plain TCP
// (SocketStream) or TLS (TlsContext::handshake). Every read and write is bounded by the
// stream's timeout. Writes take the caller's pieces where they lie and reads land where the
// caller says, so a large value crosses no buffer of ours on its way (TLS still encrypts into
// and decrypts out of its own records).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "base/status.h"

namespace qmlx {

class ByteStream {
 public:
  virtual ~ByteStream() = default;
  // Writes every byte of every piece, in order. A failure leaves the stream unusable.
  virtual Status write_all(std::span<const std::string_view> pieces) = 0;
  // Reads between 1 and out.size() bytes into out and says how many in *got. The peer closing
  // the stream is an IOError saying "closed"; a timeout is one saying "timed out".
  virtual Status read_some(std::span<uint8_t> out, size_t* got) = 0;
};

}  // namespace qmlx
