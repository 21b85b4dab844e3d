// RespWire: the RESP protocol spoken straight on a connected, blocking socket for the shared
// tier's large values, without the copies a general client makes. A command's arguments are
// written with writev from the caller's memory (an 8 MiB part is never copied into an output
// buffer), and a bulk-string reply lands directly in the caller's buffer (never accumulated in
// a read buffer, then copied into a reply object, then copied again). Only flat replies are
// understood (simple string, error, integer, bulk string, nil): what SET, GET, UNLINK and
// ASKING answer. Timeouts are the socket's own (SO_RCVTIMEO / SO_SNDTIMEO).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace qmlx {

enum class RespKind { kNone, kStatus, kError, kInteger, kBulk, kNil };

struct RespReply {
  RespKind kind = RespKind::kNone;
  // The status or error line; a bulk string that had no destination; the integer as text.
  std::string text;
  // A bulk string's length. With a destination of exactly this size its bytes are there; of
  // another size they were read and dropped (the caller sees the mismatch).
  uint64_t bulk_bytes = 0;
};

// Writes every command (RESP arrays of bulk strings) in as few writev calls as the system
// allows. Large arguments are sent from where they are.
Status resp_write_commands(int fd, const std::vector<std::vector<std::string_view>>& commands);

// Reads replies from one socket. Bytes read past the replies asked for stay buffered, so the
// reader must live as long as the pipeline it reads.
class RespReader {
 public:
  explicit RespReader(int fd) : fd_(fd), buffer_(kBufferBytes) {}

  // Reads the next reply. A bulk string goes to `into` when it has exactly that size, to
  // reply->text when `into` is empty and the string is small, and is skipped otherwise.
  Status read(std::span<uint8_t> into, RespReply* reply);
  // Whether bytes past the last reply were read (a reply nobody asked for: out of step).
  bool has_leftover() const { return begin_ < end_; }

 private:
  static constexpr size_t kBufferBytes = 64 << 10;
  // Bulk strings without a destination are kept in text only up to this size.
  static constexpr uint64_t kMaxTextBulk = 1 << 20;

  Status fill();
  Status read_line(std::string* line);
  Status read_exact(uint8_t* out, uint64_t n);
  Status skip(uint64_t n);

  int fd_;
  std::vector<char> buffer_;
  size_t begin_ = 0, end_ = 0;
};

}  // namespace qmlx
