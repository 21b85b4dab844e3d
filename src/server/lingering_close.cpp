#include "server/lingering_close.h"

#include <dirent.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <string>

namespace qmlx::server {
namespace {

using Clock = std::chrono::steady_clock;

struct Endpoint {
  std::string ip;
  int port = -1;
};

// The socket's local or peer address, formatted as httplib formats Request::local_addr and
// Request::remote_addr (getnameinfo, numeric host).
std::optional<Endpoint> endpoint_of(int fd, bool peer) {
  sockaddr_storage addr{};
  socklen_t length = sizeof addr;
  auto* raw = reinterpret_cast<sockaddr*>(&addr);
  if ((peer ? getpeername(fd, raw, &length) : getsockname(fd, raw, &length)) != 0) {
    return std::nullopt;
  }
  Endpoint endpoint;
  if (addr.ss_family == AF_INET) {
    endpoint.port = ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    endpoint.port = ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  } else {
    return std::nullopt;
  }
  std::array<char, NI_MAXHOST> host{};
  if (getnameinfo(raw, length, host.data(), host.size(), nullptr, 0, NI_NUMERICHOST) != 0) {
    return std::nullopt;
  }
  endpoint.ip = host.data();
  return endpoint;
}

bool endpoint_is(int fd, bool peer, const std::string& ip, int port) {
  auto endpoint = endpoint_of(fd, peer);
  return endpoint && endpoint->port == port && endpoint->ip == ip;
}

// httplib hands a handler the request, not its socket. A TCP connection's two endpoints are
// unique among this process's open sockets, so the socket is found by them.
std::optional<int> find_connection_socket(const httplib::Request& req) {
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return std::nullopt;
  std::optional<int> found;
  while (dirent* entry = readdir(dir)) {
    char* end = nullptr;
    long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    if (endpoint_is(int(fd), false, req.local_addr, req.local_port) &&
        endpoint_is(int(fd), true, req.remote_addr, req.remote_port)) {
      found = int(fd);
      break;
    }
  }
  closedir(dir);
  return found;
}

// Reads and discards until the client closes its side, stops sending, or time runs out.
void drain(int fd, LingerLimits limits) {
  const auto deadline = Clock::now() + limits.total;
  std::array<char, 64 * 1024> scratch;
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    auto wait = std::min(left, limits.idle);
    if (wait.count() <= 0) return;
    pollfd waiting{fd, POLLIN, 0};
    int ready = poll(&waiting, 1, int(wait.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return;
    ssize_t n = recv(fd, scratch.data(), scratch.size(), MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (n <= 0) return;  // the client closed (0) or the connection failed
  }
}

}  // namespace

bool request_body_left_unread(const httplib::Request& req) {
  auto length = req.get_header_value("Content-Length");
  return !length.empty() && std::strtoull(length.c_str(), nullptr, 10) > 0 && req.body.empty();
}

void close_connection_after_response(const httplib::Request& req, LingerLimits limits) {
  auto fd = find_connection_socket(req);
  if (!fd) return;
  shutdown(*fd, SHUT_WR);
  drain(*fd, limits);
  // httplib still owns the descriptor number and will close it. Putting /dev/null in its place
  // closes the socket now, and makes httplib's next read fail (not a socket), which ends its
  // keep-alive loop even if part of the body is still buffered or arriving.
  int dead = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (dead < 0) return;
  dup3(dead, *fd, O_CLOEXEC);
  close(dead);
}

}  // namespace qmlx::server
