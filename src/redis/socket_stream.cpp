#include "redis/socket_stream.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

namespace qmlx {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxIov = 512;  // under IOV_MAX (1024 on Linux)

// Waits (up to the deadline) for a non-blocking connect to finish; 0 or the connect's errno.
int finish_connect(int fd, Clock::time_point deadline) {
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    pollfd p{fd, POLLOUT, 0};
    const int ready = left.count() > 0 ? ::poll(&p, 1, int(left.count())) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return errno;
    if (ready == 0) return ETIMEDOUT;
    int error = 0;
    socklen_t size = sizeof(error);
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) != 0) return errno;
    return error;
  }
}

// Back to blocking, with the timeout on each read and write and Nagle off.
bool configure(int fd, int timeout_ms) {
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) return false;
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  const int one = 1;
  return setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0 &&
         setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) == 0 &&
         setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) == 0;
}

}  // namespace

Status socket_error(const char* what) {
  const int e = errno;
  if (e == EAGAIN || e == EWOULDBLOCK) return Status::IOError(std::string(what) + " timed out");
  return Status::IOError(std::string(what) + ": " + std::strerror(e));
}

SocketStream::~SocketStream() {
  if (fd_ >= 0) ::close(fd_);
}

Status SocketStream::connect(const std::string& host, int port, int timeout_ms,
                             std::unique_ptr<SocketStream>* out) {
  const std::string where = host + ":" + std::to_string(port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int resolved = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (resolved != 0) {
    return Status::IOError("cannot resolve " + host + ": " + gai_strerror(resolved));
  }
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  int error = ETIMEDOUT;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd =
        ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      error = errno;
      continue;
    }
    error = ::connect(fd, a->ai_addr, a->ai_addrlen) == 0 ? 0 : errno;
    if (error == EINPROGRESS) error = finish_connect(fd, deadline);
    if (error == 0 && !configure(fd, timeout_ms)) error = errno;
    if (error == 0) {
      freeaddrinfo(found);
      *out = std::make_unique<SocketStream>(fd);
      return Status::Ok();
    }
    ::close(fd);
    if (Clock::now() >= deadline) break;
  }
  freeaddrinfo(found);
  if (error == ETIMEDOUT) {
    return Status::IOError("connect to " + where + " timed out after " +
                           std::to_string(timeout_ms) + " ms");
  }
  return Status::IOError("connect to " + where + ": " + std::strerror(error));
}

Status SocketStream::write_all(std::span<const std::string_view> pieces) {
  std::vector<iovec> iov;
  iov.reserve(pieces.size());
  for (std::string_view piece : pieces) {
    if (!piece.empty()) iov.push_back({const_cast<char*>(piece.data()), piece.size()});
  }
  size_t first = 0;
  while (first < iov.size()) {
    msghdr message{};
    message.msg_iov = &iov[first];
    message.msg_iovlen = std::min(iov.size() - first, kMaxIov);
    const ssize_t sent = ::sendmsg(fd_, &message, MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR) continue;
      return socket_error("write");
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

Status SocketStream::read_some(std::span<uint8_t> out, size_t* got) {
  for (;;) {
    const ssize_t n = ::read(fd_, out.data(), std::min<size_t>(out.size(), size_t(1) << 30));
    if (n > 0) {
      *got = size_t(n);
      return Status::Ok();
    }
    if (n == 0) return Status::IOError("connection closed by the server");
    if (errno != EINTR) return socket_error("read");
  }
}

}  // namespace qmlx
