#include "http/socket_io.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

namespace qmlx::http {

bool send_all(int fd, const char* data, size_t size, std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + timeout;
  while (size > 0) {
    ssize_t n = send(fd, data, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      data += n;
      size -= size_t(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return false;
      pollfd waiting{fd, POLLOUT, 0};
      int ready = poll(&waiting, 1, int(std::min<long long>(left.count(), 1'000'000)));
      if (ready < 0 && errno != EINTR) return false;
      if (ready > 0 && (waiting.revents & (POLLERR | POLLHUP | POLLNVAL))) return false;
      continue;
    }
    return false;
  }
  return true;
}

bool peer_closed(int fd) {
  pollfd probe{fd, POLLIN | POLLRDHUP, 0};
  if (poll(&probe, 1, 0) <= 0) return false;
  if (probe.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return true;
  if (probe.revents & POLLIN) {
    char byte;
    ssize_t n = recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
  }
  return false;
}

std::pair<std::string, int> peer_address(int fd) {
  sockaddr_storage addr{};
  socklen_t length = sizeof addr;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &length) != 0) return {"unknown", -1};
  char text[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    auto* v4 = reinterpret_cast<sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
    return {text, ntohs(v4->sin_port)};
  }
  if (addr.ss_family == AF_INET6) {
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
    return {text, ntohs(v6->sin6_port)};
  }
  return {"unknown", -1};
}

}  // namespace qmlx::http
