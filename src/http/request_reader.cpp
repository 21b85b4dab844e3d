#include "http/request_reader.h"

#include <strings.h>

#include <algorithm>
#include <cctype>

namespace qmlx::http {
namespace {

constexpr std::string_view kCrlf = "\r\n";

bool is_token_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), is_token_char);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

// A Content-Length value: digits only (no sign, no spaces), without overflow.
bool parse_length(std::string_view s, uint64_t& out) {
  if (s.empty() || s.size() > 19) return false;
  out = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    out = out * 10 + uint64_t(c - '0');
  }
  return true;
}

// A chunk-size line's hex size (extensions after ';' ignored), without overflow.
bool parse_chunk_size(std::string_view line, uint64_t& out) {
  line = trim(line.substr(0, line.find(';')));
  if (line.empty() || line.size() > 15) return false;
  out = 0;
  for (char c : line) {
    int digit = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                : (c >= 'a' && c <= 'f')                    ? c - 'a' + 10
                : (c >= 'A' && c <= 'F')                    ? c - 'A' + 10
                                                            : -1;
    if (digit < 0) return false;
    out = out * 16 + uint64_t(digit);
  }
  return true;
}

}  // namespace

void RequestReader::reset() {
  phase_ = Phase::kHead;
  request_ = Request();
  head_scanned_ = 0;
  bytes_seen_ = 0;
  body_left_ = 0;
  trailer_bytes_ = 0;
  failed_ = false;
  body_read_ = false;
  error_status_ = 0;
  error_message_.clear();
}

bool RequestReader::expects_continue() const {
  return head_complete() && phase_ != Phase::kDone && request_.body.empty() &&
         iequals(trim(request_.get_header_value("Expect")), "100-continue");
}

RequestReader::Status RequestReader::fail(int status, std::string message) {
  failed_ = true;
  error_status_ = status;
  error_message_ = std::move(message);
  return Status::kFailed;
}

RequestReader::Status RequestReader::consume(std::string& input) {
  if (failed_) return Status::kFailed;
  if (phase_ == Phase::kDone) return Status::kComplete;
  if (phase_ == Phase::kHead) {
    // Blank lines before a request line are ignored (RFC 9112 2.2), e.g. after a body's CRLF.
    if (bytes_seen_ == 0) {
      size_t skip = 0;
      while (skip < input.size() && (input[skip] == '\r' || input[skip] == '\n')) ++skip;
      input.erase(0, skip);
    }
    size_t from = head_scanned_ >= 3 ? head_scanned_ - 3 : 0;
    size_t end = input.find("\r\n\r\n", from);
    if (end == std::string::npos) {
      head_scanned_ = input.size();
      bytes_seen_ = input.size();
      if (input.size() > limits_.max_head_bytes) {
        return fail(
            431, "the request head exceeds " + std::to_string(limits_.max_head_bytes) + " bytes");
      }
      return Status::kNeedMore;
    }
    if (end + 4 > limits_.max_head_bytes) {
      return fail(431,
                  "the request head exceeds " + std::to_string(limits_.max_head_bytes) + " bytes");
    }
    bytes_seen_ = end + 4;
    Status status = parse_head(std::string_view(input).substr(0, end + 2));
    input.erase(0, end + 4);
    if (status == Status::kFailed) return status;
    status = start_body();
    if (status != Status::kNeedMore) return status;
  }
  if (phase_ == Phase::kFixedBody) {
    if (!take_body_bytes(input)) return Status::kNeedMore;
    body_read_ = true;
    phase_ = Phase::kDone;
    return Status::kComplete;
  }
  return consume_chunked(input);
}

RequestReader::Status RequestReader::parse_head(std::string_view head) {
  size_t line_end = head.find(kCrlf);
  std::string_view line = head.substr(0, line_end);
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return fail(400, "malformed request line");
  }
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (!is_token(method)) return fail(400, "malformed request method");
  if (target.empty() || target.front() != '/' ||
      std::any_of(target.begin(), target.end(),
                  [](char c) { return static_cast<unsigned char>(c) <= ' ' || c == 0x7f; })) {
    return fail(400, "malformed request target");
  }
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    return fail(505, "HTTP version " + std::string(version.substr(0, 16)) + " is not supported");
  }
  request_.method = std::string(method);
  request_.target = std::string(target);
  size_t question = target.find('?');
  request_.path = std::string(target.substr(0, question));
  request_.query =
      question == std::string_view::npos ? "" : std::string(target.substr(question + 1));
  request_.version = std::string(version);

  size_t pos = line_end + 2;
  while (pos < head.size()) {
    size_t next = head.find(kCrlf, pos);
    std::string_view field = head.substr(pos, next - pos);
    pos = next + 2;
    if (field.front() == ' ' || field.front() == '\t') {
      return fail(400, "obsolete header line folding is not accepted");
    }
    size_t colon = field.find(':');
    if (colon == std::string_view::npos || !is_token(field.substr(0, colon))) {
      return fail(400, "malformed header line");
    }
    std::string_view value = trim(field.substr(colon + 1));
    if (std::any_of(value.begin(), value.end(),
                    [](char c) { return c == '\0' || c == '\r' || c == '\n'; })) {
      return fail(400, "malformed header value");
    }
    request_.headers.emplace(std::string(field.substr(0, colon)), std::string(value));
  }
  return Status::kNeedMore;
}

RequestReader::Status RequestReader::start_body() {
  bool has_length = false;
  uint64_t length = 0;
  auto lengths = request_.headers.equal_range("Content-Length");
  for (auto it = lengths.first; it != lengths.second; ++it) {
    // A list ("5, 5") of equal values is one length (RFC 9110 8.6); anything else is refused.
    std::string_view values = it->second;
    while (true) {
      size_t comma = values.find(',');
      uint64_t value = 0;
      if (!parse_length(trim(values.substr(0, comma)), value)) {
        return fail(400, "invalid Content-Length: " + it->second.substr(0, 32));
      }
      if (has_length && value != length) return fail(400, "conflicting Content-Length headers");
      has_length = true;
      length = value;
      if (comma == std::string_view::npos) break;
      values.remove_prefix(comma + 1);
    }
  }
  if (request_.has_header("Transfer-Encoding")) {
    if (has_length) return fail(400, "both Content-Length and Transfer-Encoding are set");
    std::string coding(trim(request_.get_header_value("Transfer-Encoding")));
    if (!iequals(coding, "chunked") || request_.headers.count("Transfer-Encoding") > 1) {
      return fail(501, "Transfer-Encoding '" + coding.substr(0, 32) + "' is not supported");
    }
    phase_ = Phase::kChunkSize;
    return Status::kNeedMore;
  }
  if (length > limits_.max_body_bytes) {
    return fail(413, "request body of " + std::to_string(length) + " bytes exceeds the limit of " +
                         std::to_string(limits_.max_body_bytes) + " bytes");
  }
  if (length == 0) {
    body_read_ = true;
    phase_ = Phase::kDone;
    return Status::kComplete;
  }
  request_.body.reserve(size_t(length));
  body_left_ = length;
  phase_ = Phase::kFixedBody;
  return Status::kNeedMore;
}

bool RequestReader::take_body_bytes(std::string& input) {
  size_t take = size_t(std::min<uint64_t>(body_left_, input.size()));
  request_.body.append(input, 0, take);
  input.erase(0, take);
  bytes_seen_ += take;
  body_left_ -= take;
  return body_left_ == 0;
}

RequestReader::Status RequestReader::consume_chunked(std::string& input) {
  while (true) {
    if (phase_ == Phase::kChunkData) {
      if (!take_body_bytes(input)) return Status::kNeedMore;
      phase_ = Phase::kChunkDataEnd;
      continue;
    }
    // The other phases read one line at a time; a line is short, so bound it.
    size_t end = input.find(kCrlf);
    if (end == std::string::npos) {
      if (input.size() > 1024) return fail(400, "malformed chunked body (line too long)");
      return Status::kNeedMore;
    }
    std::string_view line = std::string_view(input).substr(0, end);
    bytes_seen_ += end + 2;
    if (phase_ == Phase::kChunkDataEnd) {
      if (!line.empty()) return fail(400, "malformed chunked body (no CRLF after a chunk)");
      phase_ = Phase::kChunkSize;
    } else if (phase_ == Phase::kChunkSize) {
      uint64_t size = 0;
      if (!parse_chunk_size(line, size)) return fail(400, "malformed chunk size");
      if (size > limits_.max_body_bytes - request_.body.size()) {
        return fail(413, "chunked request body exceeds the limit of " +
                             std::to_string(limits_.max_body_bytes) + " bytes");
      }
      body_left_ = size;
      phase_ = size == 0 ? Phase::kTrailers : Phase::kChunkData;
    } else {  // kTrailers: ignored, bounded like a head
      trailer_bytes_ += end + 2;
      if (trailer_bytes_ > limits_.max_head_bytes) return fail(431, "request trailers too large");
      if (line.empty()) {
        input.erase(0, end + 2);
        body_read_ = true;
        phase_ = Phase::kDone;
        return Status::kComplete;
      }
    }
    input.erase(0, end + 2);
  }
}

}  // namespace qmlx::http
