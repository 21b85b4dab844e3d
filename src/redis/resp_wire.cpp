#include "redis/resp_wire.h"

#include <algorithm>
#include <charconv>
#include <cstring>

namespace qmlx {
namespace {

// Arguments up to this size are copied into the frame (keys, small values); larger ones are
// sent from the caller's memory.
constexpr size_t kCopyBelow = 4096;
// A bulk string kept in text grows by at most this much before its bytes have arrived.
constexpr uint64_t kGrowStep = 1 << 20;
// Array elements reserved before they have arrived.
constexpr size_t kReserveElements = 1024;

// A piece of the outgoing stream: a range of the frame (small pieces) or of caller memory.
struct Piece {
  const char* data;  // null: frame_offset is used
  size_t frame_offset;
  size_t size;
};

// A RESP integer or length: an optional '-' and 1 to 19 digits, nothing else.
bool parse_integer(std::string_view text, int64_t* out) {
  if (text.empty() || text.size() > 20) return false;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return error == std::errc() && end == text.data() + text.size();
}

Status protocol_error(const std::string& what) {
  return Status::IOError("protocol error: " + what);
}

}  // namespace

std::string_view RespReply::str() const {
  return kind == RespKind::kBulk || kind == RespKind::kStatus || kind == RespKind::kError
             ? std::string_view(text)
             : std::string_view();
}

Status resp_write_commands(ByteStream& stream,
                           const std::vector<std::vector<std::string_view>>& commands) {
  std::string frame;
  std::vector<Piece> pieces;
  size_t frame_start = 0;  // where the current run of frame bytes began
  auto flush_frame_run = [&] {
    if (frame.size() > frame_start) {
      pieces.push_back({nullptr, frame_start, frame.size() - frame_start});
    }
    frame_start = frame.size();
  };
  for (const std::vector<std::string_view>& args : commands) {
    frame += "*" + std::to_string(args.size()) + "\r\n";
    for (std::string_view arg : args) {
      frame += "$" + std::to_string(arg.size()) + "\r\n";
      if (arg.size() < kCopyBelow) {
        frame.append(arg);
      } else {
        flush_frame_run();
        pieces.push_back({arg.data(), 0, arg.size()});
      }
      frame += "\r\n";
    }
  }
  flush_frame_run();
  std::vector<std::string_view> views;
  views.reserve(pieces.size());
  for (const Piece& p : pieces) {
    views.emplace_back(p.data != nullptr ? p.data : frame.data() + p.frame_offset, p.size);
  }
  return stream.write_all(views);
}

Status RespReader::fill() {
  if (begin_ == end_) begin_ = end_ = 0;
  if (end_ == buffer_.size()) {  // keep the unread tail, make room behind it
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
    if (end_ == buffer_.size()) return protocol_error("reply line too long");
  }
  size_t got = 0;
  Status s = stream_.read_some(
      {reinterpret_cast<uint8_t*>(buffer_.data()) + end_, buffer_.size() - end_}, &got);
  if (s.ok()) end_ += got;
  return s;
}

Status RespReader::read_line(std::string* line) {
  for (;;) {
    const char* start = buffer_.data() + begin_;
    const char* stop = buffer_.data() + end_;
    const char* cr = std::search(start, stop, "\r\n", "\r\n" + 2);
    if (cr != stop) {
      line->assign(start, cr);
      begin_ += size_t(cr - start) + 2;
      return Status::Ok();
    }
    Status s = fill();
    if (!s.ok()) return s;
  }
}

Status RespReader::read_exact(uint8_t* out, uint64_t n) {
  const uint64_t buffered = std::min<uint64_t>(n, end_ - begin_);
  std::memcpy(out, buffer_.data() + begin_, buffered);
  begin_ += buffered;
  uint64_t done = buffered;
  // The rest goes straight from the stream into place.
  while (done < n) {
    size_t got = 0;
    Status s = stream_.read_some({out + done, size_t(n - done)}, &got);
    if (!s.ok()) return s;
    done += got;
  }
  return Status::Ok();
}

Status RespReader::skip(uint64_t n) {
  while (n > 0) {
    if (begin_ == end_) {
      Status s = fill();
      if (!s.ok()) return s;
    }
    const uint64_t take = std::min<uint64_t>(n, end_ - begin_);
    begin_ += take;
    n -= take;
  }
  return Status::Ok();
}

Status RespReader::read(std::span<uint8_t> into, RespReply* reply) {
  *reply = RespReply{};
  Budget budget{limits_.max_elements, limits_.max_bytes};
  return read_value(into, 0, budget, reply);
}

Status RespReader::read_value(std::span<uint8_t> into, size_t depth, Budget& budget,
                              RespReply* reply) {
  std::string line;
  Status s = read_line(&line);
  if (!s.ok()) return s;
  if (line.empty()) return protocol_error("empty reply line");
  const char type = line[0];
  std::string_view rest = std::string_view(line).substr(1);
  int64_t number = 0;
  switch (type) {
    case '+':
      reply->kind = RespKind::kStatus;
      reply->text = rest;
      return Status::Ok();
    case '-':
      reply->kind = RespKind::kError;
      reply->text = rest;
      return Status::Ok();
    case ':':
      if (!parse_integer(rest, &number)) return protocol_error("bad integer \"" + line + "\"");
      reply->kind = RespKind::kInteger;
      reply->integer = number;
      reply->text = rest;
      return Status::Ok();
    case '$':
      if (!parse_integer(rest, &number) || number < -1) {
        return protocol_error("bad bulk length \"" + line + "\"");
      }
      return read_bulk(number, into, budget, reply);
    case '*':
      break;
    default:
      return protocol_error("unexpected reply type '" + std::string(1, type) + "'");
  }
  if (!parse_integer(rest, &number) || number < -1) {
    return protocol_error("bad array length \"" + line + "\"");
  }
  if (number == -1) {
    reply->kind = RespKind::kNil;
    return Status::Ok();
  }
  if (depth + 1 > limits_.max_depth) {
    return protocol_error("arrays nested deeper than " + std::to_string(limits_.max_depth));
  }
  if (uint64_t(number) > budget.elements) {
    return protocol_error("array of " + std::to_string(number) + " elements is over the limit of " +
                          std::to_string(limits_.max_elements) + " per reply");
  }
  budget.elements -= size_t(number);
  reply->kind = RespKind::kArray;
  reply->elements.reserve(std::min<size_t>(size_t(number), kReserveElements));
  for (int64_t i = 0; i < number; ++i) {
    s = read_value({}, depth + 1, budget, &reply->elements.emplace_back());
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

Status RespReader::read_bulk(int64_t length, std::span<uint8_t> into, Budget& budget,
                             RespReply* reply) {
  if (length == -1) {
    reply->kind = RespKind::kNil;
    return Status::Ok();
  }
  const uint64_t n = uint64_t(length);
  reply->kind = RespKind::kBulk;
  reply->bulk_bytes = n;
  Status s;
  if (!into.empty()) {
    s = into.size() == n ? read_exact(into.data(), n) : skip(n);
  } else {
    if (n > budget.bytes) {
      return protocol_error("bulk string of " + std::to_string(n) + " bytes is over the limit of " +
                            std::to_string(limits_.max_bytes) + " per reply");
    }
    budget.bytes -= n;
    // Grown as the bytes arrive: a length the server announces but never sends costs nothing.
    for (uint64_t done = 0; s.ok() && done < n;) {
      const uint64_t step = std::min(n - done, kGrowStep);
      reply->text.resize(size_t(done + step));
      s = read_exact(reinterpret_cast<uint8_t*>(reply->text.data()) + done, step);
      done += step;
    }
  }
  if (!s.ok()) return s;
  std::string end;
  s = read_line(&end);
  if (!s.ok()) return s;
  if (!end.empty()) return protocol_error("bulk string not followed by CRLF");
  return Status::Ok();
}

}  // namespace qmlx
