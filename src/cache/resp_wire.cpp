#include "cache/resp_wire.h"

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

namespace qmlx {
namespace {

// Arguments up to this size are copied into the frame (keys, small values); larger ones are
// sent from the caller's memory.
constexpr size_t kCopyBelow = 4096;
constexpr size_t kMaxIov = 512;  // under IOV_MAX (1024 on Linux)

Status io_error(const char* what) {
  const int e = errno;
  if (e == EAGAIN || e == EWOULDBLOCK)
    return Status::IOError(std::string("redis: ") + what + " timed out");
  return Status::IOError(std::string("redis: ") + what + ": " + std::strerror(e));
}

// A piece of the outgoing stream: a range of the frame (small pieces) or of caller memory.
struct Piece {
  const char* data;  // null: frame_offset is used
  size_t frame_offset;
  size_t size;
};

Status send_all(int fd, std::vector<iovec>& iov) {
  size_t first = 0;
  while (first < iov.size()) {
    msghdr message{};
    message.msg_iov = &iov[first];
    message.msg_iovlen = std::min(iov.size() - first, kMaxIov);
    const ssize_t sent = sendmsg(fd, &message, MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR) continue;
      return io_error("write");
    }
    size_t left = size_t(sent);
    while (first < iov.size() && left >= iov[first].iov_len) left -= iov[first++].iov_len;
    if (left > 0) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
      iov[first].iov_len -= left;
    }
  }
  return Status::Ok();
}

}  // namespace

Status resp_write_commands(int fd, const std::vector<std::vector<std::string_view>>& commands) {
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
  std::vector<iovec> iov;
  iov.reserve(pieces.size());
  for (const Piece& p : pieces) {
    const char* base = p.data != nullptr ? p.data : frame.data() + p.frame_offset;
    iov.push_back({const_cast<char*>(base), p.size});
  }
  return send_all(fd, iov);
}

Status RespReader::fill() {
  if (begin_ == end_) begin_ = end_ = 0;
  if (end_ == buffer_.size()) {  // keep the unread tail, make room behind it
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
    if (end_ == buffer_.size()) return Status::IOError("redis: reply line too long");
  }
  for (;;) {
    const ssize_t got = ::read(fd_, buffer_.data() + end_, buffer_.size() - end_);
    if (got > 0) {
      end_ += size_t(got);
      return Status::Ok();
    }
    if (got == 0) return Status::IOError("redis: connection closed by the server");
    if (errno != EINTR) return io_error("read");
  }
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
  // The rest goes straight from the socket into place.
  while (done < n) {
    const ssize_t got = ::read(fd_, out + done, size_t(std::min<uint64_t>(n - done, 1ull << 30)));
    if (got > 0) {
      done += uint64_t(got);
    } else if (got == 0) {
      return Status::IOError("redis: connection closed by the server");
    } else if (errno != EINTR) {
      return io_error("read");
    }
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
  std::string line;
  Status s = read_line(&line);
  if (!s.ok()) return s;
  if (line.empty()) return Status::IOError("redis: empty reply line");
  const char type = line[0];
  std::string rest = line.substr(1);
  switch (type) {
    case '+':
      reply->kind = RespKind::kStatus;
      reply->text = std::move(rest);
      return Status::Ok();
    case '-':
      reply->kind = RespKind::kError;
      reply->text = std::move(rest);
      return Status::Ok();
    case ':':
      reply->kind = RespKind::kInteger;
      reply->text = std::move(rest);
      return Status::Ok();
    case '$':
      break;
    default:
      return Status::IOError("redis: unexpected reply type '" + std::string(1, type) + "'");
  }
  if (rest == "-1") {
    reply->kind = RespKind::kNil;
    return Status::Ok();
  }
  uint64_t length = 0;
  if (rest.empty() || rest.size() > 19 ||
      !std::all_of(rest.begin(), rest.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return Status::IOError("redis: bad bulk length \"" + rest + "\"");
  }
  length = std::stoull(rest);
  reply->kind = RespKind::kBulk;
  reply->bulk_bytes = length;
  if (!into.empty() && into.size() == length) {
    s = read_exact(into.data(), length);
  } else if (into.empty() && length <= kMaxTextBulk) {
    reply->text.resize(size_t(length));
    s = read_exact(reinterpret_cast<uint8_t*>(reply->text.data()), length);
  } else {
    s = skip(length);
  }
  if (!s.ok()) return s;
  std::string end;
  s = read_line(&end);
  if (!s.ok()) return s;
  if (!end.empty()) return Status::IOError("redis: bulk string not followed by CRLF");
  return Status::Ok();
}

}  // namespace qmlx
