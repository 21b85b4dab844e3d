// RespWire: the RESP2 protocol over a ByteStream, the Redis client's whole wire format. A
// command's arguments are written from the caller's memory (an 8 MiB part is never copied into
// an output buffer), and a bulk-string reply can land directly in a caller's buffer (never
// accumulated in a read buffer, then copied into a reply object, then copied again). Replies of
// every RESP2 type are read into RespReply, arrays nested (CLUSTER SLOTS, SCAN, HGETALL). What
// the server sends is not trusted: nesting, element counts and the bytes one reply may hold are
// bounded (RespLimits), and anything malformed, cut short or over a limit is an IOError.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "redis/byte_stream.h"

namespace qmlx {

enum class RespKind { kNone, kStatus, kError, kInteger, kBulk, kNil, kArray };

// One reply (a nil bulk string and a nil array are both kNil).
struct RespReply {
  RespKind kind = RespKind::kNone;
  // The status or error line; a bulk string that had no destination; the integer as text.
  std::string text;
  int64_t integer = 0;
  // A bulk string's length. With a destination of exactly this size its bytes are there; of
  // another size they were read and dropped (the caller sees the mismatch).
  uint64_t bulk_bytes = 0;
  std::vector<RespReply> elements;  // an array's

  // The text of a bulk string, status or error ("" for other kinds).
  std::string_view str() const;
};

// What one reply may hold; past any of these the read fails (a broken or hostile server costs
// an error, never a crash or an allocation it did not pay for by sending the bytes).
struct RespLimits {
  size_t max_depth = 8;                    // arrays inside arrays (CLUSTER SLOTS needs 3)
  size_t max_elements = size_t(1) << 20;   // array elements in one reply, all levels together
  uint64_t max_bytes = uint64_t(1) << 30;  // bulk bytes kept in one reply (not destinations)
};

// Writes every command (RESP arrays of bulk strings) in one write_all. Large arguments are sent
// from where they are.
Status resp_write_commands(ByteStream& stream,
                           const std::vector<std::vector<std::string_view>>& commands);

// Reads replies from one stream. Bytes read past the replies asked for stay buffered, so the
// reader must live as long as the connection it reads.
class RespReader {
 public:
  explicit RespReader(ByteStream& stream, RespLimits limits = {})
      : stream_(stream), limits_(limits), buffer_(kBufferBytes) {}

  // Reads the next reply. A top-level bulk string goes to `into` when it has exactly that
  // size, is skipped when `into` has another size, and is kept in reply->text when `into` is
  // empty; bulk strings inside arrays are kept in their element's text.
  Status read(std::span<uint8_t> into, RespReply* reply);
  // Whether bytes past the last reply were read (a reply nobody asked for: out of step).
  bool has_leftover() const { return begin_ < end_; }

 private:
  static constexpr size_t kBufferBytes = 64 << 10;
  struct Budget {
    size_t elements;
    uint64_t bytes;
  };

  Status read_value(std::span<uint8_t> into, size_t depth, Budget& budget, RespReply* reply);
  Status read_bulk(int64_t length, std::span<uint8_t> into, Budget& budget, RespReply* reply);
  Status fill();
  Status read_line(std::string* line);
  Status read_exact(uint8_t* out, uint64_t n);
  Status skip(uint64_t n);

  ByteStream& stream_;
  RespLimits limits_;
  std::vector<char> buffer_;
  size_t begin_ = 0, end_ = 0;
};

}  // namespace qmlx
