// RequestReader: reads one HTTP/1.1 request from bytes as they arrive, however they are split
// (a byte at a time from a slow client, or several pipelined requests in one read).
//
// It owns the framing rules, so that every limit holds before anything is buffered: the head
// is bounded (431), the body is bounded whether it comes with a Content-Length or chunked
// (413 as soon as the declared length or the decoded chunks pass the limit), a request
// without either has no body (RFC 9112 6.3), and ambiguous framing (Content-Length with
// Transfer-Encoding, differing Content-Lengths, a negative one) is a 400, never a guess.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "http/message.h"

namespace qmlx::http {

struct ReadLimits {
  size_t max_head_bytes = 64 * 1024;
  size_t max_body_bytes = size_t(64) << 20;
};

class RequestReader {
 public:
  enum class Status { kNeedMore, kComplete, kFailed };

  explicit RequestReader(ReadLimits limits) : limits_(limits) {}

  // Takes bytes from the front of `input`; bytes after a complete request stay there (the
  // next pipelined request). Once kComplete or kFailed, call reset() before the next one.
  Status consume(std::string& input);

  // The head has been read (method, path, headers are set in request()).
  bool head_complete() const { return phase_ > Phase::kHead; }
  // The head asks for `100 Continue` before the client sends its body.
  bool expects_continue() const;
  // Bytes of this request received so far (head included); 0 before the first byte.
  size_t bytes_seen() const { return bytes_seen_; }

  Request& request() { return request_; }
  // After kFailed: the status to answer (400, 413, 431, 501, 505) and why.
  int error_status() const { return error_status_; }
  const std::string& error_message() const { return error_message_; }
  // The request failed before its body was read to the end, so the connection's next bytes
  // are not a request head: it must close after the answer.
  bool connection_unusable() const { return failed_ && !body_read_; }

  void reset();

 private:
  enum class Phase { kHead, kFixedBody, kChunkSize, kChunkData, kChunkDataEnd, kTrailers, kDone };

  Status fail(int status, std::string message);
  Status parse_head(std::string_view head);
  Status start_body();
  Status consume_chunked(std::string& input);
  // Moves up to body_left_ bytes (of the fixed body or the current chunk) from `input` into
  // the body; true once body_left_ reaches 0.
  bool take_body_bytes(std::string& input);

  ReadLimits limits_;
  Phase phase_ = Phase::kHead;
  Request request_;
  size_t head_scanned_ = 0;  // where the search for the head's end resumes
  size_t bytes_seen_ = 0;
  uint64_t body_left_ = 0;  // of the Content-Length body, or of the current chunk
  size_t trailer_bytes_ = 0;
  bool failed_ = false;
  bool body_read_ = false;
  int error_status_ = 0;
  std::string error_message_;
};

}  // namespace qmlx::http
