#include "http/server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "base/error.h"
#include "http/response_writer.h"
#include "http/socket_io.h"

namespace qmlx::http {
namespace {

using Clock = std::chrono::steady_clock;

// Paths longer than this are refused before routing: std::regex matches by recursion, so a
// huge path could exhaust a worker's stack.
constexpr size_t kMaxPathBytes = 4096;
// At most this much is read from one connection per event, so one fast client cannot keep
// the loop from the others.
constexpr size_t kReadBudget = 1 << 20;
constexpr auto kDeadlineScan = std::chrono::milliseconds(100);
constexpr auto kAcceptPause = std::chrono::milliseconds(100);

bool iequals(const std::string& a, const char* b) { return strcasecmp(a.c_str(), b) == 0; }

// Whether the client asked to close after this request (HTTP/1.1 keeps alive by default,
// HTTP/1.0 closes unless it asks otherwise).
bool client_wants_close(const Request& request) {
  std::string connection = request.get_header_value("Connection");
  for (char& c : connection) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (request.version == "HTTP/1.0") return connection.find("keep-alive") == std::string::npos;
  return connection.find("close") != std::string::npos;
}

// More descriptors than the default soft limit of 1024 let the server hold many idle
// connections without refusing new ones.
void raise_descriptor_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

void default_error_handler(const Request&, Response& response, const std::string& reason) {
  response.set_content(reason + "\n", "text/plain; charset=utf-8");
}

}  // namespace

struct Server::Connection {
  Connection(int f, std::pair<std::string, int> peer, ReadLimits limits, uint64_t seq)
      : fd(f), address(std::move(peer.first)), port(peer.second), reader(limits), sequence(seq) {}

  int fd;
  std::string address;
  int port;
  std::string input;                         // received, not yet consumed by the reader
  RequestReader reader;                      // the request being received
  uint64_t sequence;                         // accept order
  Clock::time_point started = Clock::now();  // accepted, back from a worker, or first byte
  Clock::time_point last_byte = Clock::now();
  bool receiving = false;  // some byte of the current request has arrived
  bool continue_sent = false;
  bool peer_eof = false;
  bool draining = false;  // lingering close: reading and discarding until the client closes
  Clock::time_point drain_deadline;
  int forced_status = 0;  // the event loop's own refusal (408), answered by a worker
  std::string forced_reason;
};

Server::Server(ServerSettings settings) : settings_(settings) {}

Server::~Server() { shutdown(std::chrono::milliseconds(0)); }

void Server::add_route(const char* method, const std::string& pattern, Handler handler) {
  routes_.push_back({method, std::regex(pattern), std::move(handler)});
}

void Server::Get(const std::string& p, Handler h) { add_route("GET", p, std::move(h)); }
void Server::Post(const std::string& p, Handler h) { add_route("POST", p, std::move(h)); }
void Server::Put(const std::string& p, Handler h) { add_route("PUT", p, std::move(h)); }
void Server::Delete(const std::string& p, Handler h) { add_route("DELETE", p, std::move(h)); }
void Server::Patch(const std::string& p, Handler h) { add_route("PATCH", p, std::move(h)); }

int Server::bind(const std::string& host, int port) {
  raise_descriptor_limit();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  std::string service = std::to_string(port);
  if (int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    throw Error("cannot resolve " + host + ": " + gai_strerror(rc));
  }
  std::string failure = "no address";
  for (addrinfo* a = found; a && listen_fd_ < 0; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    // SO_REUSEADDR lets a restarted server bind past old TIME_WAIT connections; it does not
    // let two listening sockets share a port (SO_REUSEPORT would, and is not set).
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 1024) == 0) {
      listen_fd_ = fd;
    } else {
      failure = std::strerror(errno);
      close(fd);
    }
  }
  freeaddrinfo(found);
  if (listen_fd_ < 0) {
    throw Error("cannot listen on " + host + ":" + service + ": " + failure +
                (failure == std::strerror(EADDRINUSE) ? " (another server on this port?)" : ""));
  }
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &length);
  if (bound.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
}

void Server::start() {
  if (listen_fd_ < 0) throw Error("Server::start before bind");
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0) throw Error("cannot create the HTTP event loop");
  epoll_event listen_event{EPOLLIN, {.fd = listen_fd_}};
  epoll_event wake_event{EPOLLIN, {.fd = wake_fd_}};
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &listen_event);
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &wake_event);
  for (size_t i = 0; i < std::max<size_t>(1, settings_.worker_threads); ++i) {
    workers_.emplace_back([this] { worker_loop(); });
  }
  loop_thread_ = std::thread([this] { event_loop(); });
}

void Server::stop_accepting() {
  if (stopping_.exchange(true)) return;
  if (wake_fd_ >= 0) {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof one);
  }
  if (loop_thread_.joinable()) loop_thread_.join();
  if (listen_fd_ >= 0) {
    close(listen_fd_);
    listen_fd_ = -1;
  }
}

void Server::shutdown(std::chrono::milliseconds grace) {
  stop_accepting();
  std::unique_lock<std::mutex> lock(mutex_);
  work_finished_.wait_for(lock, grace, [this] { return busy_workers_ == 0 && queue_.empty(); });
  // Whatever is still being served is cut: its writes fail at once and its handler ends.
  for (int fd : serving_) ::shutdown(fd, SHUT_RDWR);
  workers_exit_ = true;
  work_ready_.notify_all();
  lock.unlock();
  for (auto& worker : workers_) worker.join();
  workers_.clear();
  lock.lock();
  for (auto& connection : returned_) close(connection->fd);
  for (auto& connection : queue_) close(connection->fd);
  returned_.clear();
  queue_.clear();
  lock.unlock();
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
  epoll_fd_ = wake_fd_ = -1;
}

Server::Stats Server::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {open_connections_, busy_workers_, evicted_, timed_out_};
}

void Server::event_loop() {
  std::array<epoll_event, 256> events;
  auto next_scan = Clock::now() + kDeadlineScan;
  auto accept_resume = Clock::time_point::max();
  while (!stopping_) {
    int n = epoll_wait(epoll_fd_, events.data(), int(events.size()), int(kDeadlineScan.count()));
    for (int i = 0; i < n; ++i) {
      int fd = events[size_t(i)].data.fd;
      if (fd == wake_fd_) {
        uint64_t count;
        [[maybe_unused]] ssize_t r = read(wake_fd_, &count, sizeof count);
      } else if (fd == listen_fd_) {
        if (!accept_connections()) {
          // Out of descriptors and nothing to evict: stop polling the listener for a moment
          // rather than spin on it.
          epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
          accept_resume = Clock::now() + kAcceptPause;
        }
      } else if (auto it = owned_.find(fd); it != owned_.end()) {
        read_from(*it->second);
        advance(fd);
      }
    }
    take_back_returned();
    auto now = Clock::now();
    if (now >= accept_resume) {
      epoll_event listen_event{EPOLLIN, {.fd = listen_fd_}};
      epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &listen_event);
      accept_resume = Clock::time_point::max();
    }
    if (now >= next_scan) {
      check_deadlines();
      next_scan = now + kDeadlineScan;
    }
  }
  std::vector<int> fds;
  for (const auto& [fd, connection] : owned_) fds.push_back(fd);
  for (int fd : fds) close_owned(fd);
}

bool Server::accept_connections() {
  while (true) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE) {
        if (make_room_for("")) continue;
        return false;
      }
      return true;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto peer = peer_address(fd);
    if (!make_room_for(peer.first)) {
      close(fd);
      continue;
    }
    auto connection =
        std::make_unique<Connection>(fd, std::move(peer), settings_.read, next_sequence_++);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++per_address_[connection->address];
      ++open_connections_;
    }
    epoll_event event{EPOLLIN | EPOLLRDHUP, {.fd = fd}};
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event);
    owned_.emplace(fd, std::move(connection));
  }
}

// Makes room for one more connection from `address` ("" when the process is out of
// descriptors): over a limit, the oldest connection of that address (or of any, for the total
// limit) that is not being served is closed. False when there is none to close.
bool Server::make_room_for(const std::string& address) {
  bool per_address_full = false;
  bool total_full = address.empty();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = per_address_.find(address);
    per_address_full =
        it != per_address_.end() && it->second >= settings_.max_connections_per_address;
    total_full = total_full || open_connections_ >= settings_.max_connections;
  }
  if (!per_address_full && !total_full) return true;
  int oldest = -1;
  uint64_t oldest_sequence = UINT64_MAX;
  for (const auto& [fd, connection] : owned_) {
    if (per_address_full && connection->address != address) continue;
    if (connection->sequence < oldest_sequence) {
      oldest_sequence = connection->sequence;
      oldest = fd;
    }
  }
  if (oldest < 0) return false;
  close_owned(oldest);
  std::lock_guard<std::mutex> lock(mutex_);
  ++evicted_;
  return true;
}

void Server::read_from(Connection& connection) {
  std::array<char, 64 * 1024> buffer;
  size_t budget = kReadBudget;
  while (budget > 0) {
    ssize_t n = recv(connection.fd, buffer.data(), std::min(buffer.size(), budget), 0);
    if (n > 0) {
      budget -= size_t(n);
      connection.last_byte = Clock::now();
      if (!connection.draining) connection.input.append(buffer.data(), size_t(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    connection.peer_eof = true;  // closed (0) or failed
    return;
  }
}

void Server::advance(int fd) {
  Connection& connection = *owned_.at(fd);
  if (connection.draining) {
    if (connection.peer_eof) close_owned(fd);
    return;
  }
  if (!connection.input.empty()) {
    if (!connection.receiving) {
      connection.receiving = true;
      connection.started = Clock::now();
    }
    auto status = connection.reader.consume(connection.input);
    if (status != RequestReader::Status::kNeedMore) {
      dispatch(fd);
      return;
    }
    if (connection.reader.expects_continue() && !connection.continue_sent) {
      connection.continue_sent = true;
      static constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
      send_all(fd, kContinue, sizeof kContinue - 1, std::chrono::milliseconds(0));
    }
  }
  if (connection.peer_eof) close_owned(fd);
}

void Server::check_deadlines() {
  const auto now = Clock::now();
  std::vector<int> to_close;
  std::vector<std::pair<int, std::string>> to_refuse;
  for (const auto& [fd, c] : owned_) {
    if (c->draining) {
      if (now >= c->drain_deadline || now - c->last_byte >= settings_.linger_idle) {
        to_close.push_back(fd);
      }
    } else if (!c->receiving) {
      if (now - c->started >= settings_.keep_alive_timeout) to_close.push_back(fd);
    } else if (!c->reader.head_complete()) {
      if (now - c->started >= settings_.head_timeout) {
        to_refuse.emplace_back(fd, "the request head did not arrive within " +
                                       std::to_string(settings_.head_timeout.count() / 1000) +
                                       " s");
      }
    } else if (now - c->last_byte >= settings_.body_idle_timeout) {
      to_refuse.emplace_back(fd, "the request body stalled for " +
                                     std::to_string(settings_.body_idle_timeout.count() / 1000) +
                                     " s");
    }
  }
  for (int fd : to_close) close_owned(fd);
  for (auto& [fd, reason] : to_refuse) {
    Connection& c = *owned_.at(fd);
    c.forced_status = 408;
    c.forced_reason = std::move(reason);
    dispatch(fd);
  }
  if (!to_refuse.empty()) {
    std::lock_guard<std::mutex> lock(mutex_);
    timed_out_ += to_refuse.size();
  }
}

void Server::dispatch(int fd) {
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  auto it = owned_.find(fd);
  std::unique_ptr<Connection> connection = std::move(it->second);
  owned_.erase(it);
  std::lock_guard<std::mutex> lock(mutex_);
  serving_.insert(fd);
  queue_.push_back(std::move(connection));
  work_ready_.notify_one();
}

void Server::close_owned(int fd) {
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  auto it = owned_.find(fd);
  std::string address = it->second->address;
  owned_.erase(it);
  close(fd);
  std::lock_guard<std::mutex> lock(mutex_);
  count_closed(address);
}

void Server::count_closed(const std::string& address) {
  if (auto count = per_address_.find(address);
      count != per_address_.end() && --count->second == 0) {
    per_address_.erase(count);
  }
  --open_connections_;
}

void Server::take_back_returned() {
  std::vector<std::unique_ptr<Connection>> back;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    back.swap(returned_);
  }
  for (auto& connection : back) {
    int fd = connection->fd;
    epoll_event event{EPOLLIN | EPOLLRDHUP, {.fd = fd}};
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event);
    owned_.emplace(fd, std::move(connection));
    advance(fd);  // a pipelined request may already be buffered
  }
}

void Server::worker_loop() {
  while (true) {
    std::unique_ptr<Connection> connection;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_ready_.wait(lock, [this] { return workers_exit_ || !queue_.empty(); });
      if (workers_exit_) return;
      connection = std::move(queue_.front());
      queue_.pop_front();
      ++busy_workers_;
    }
    serve(std::move(connection));
    std::lock_guard<std::mutex> lock(mutex_);
    --busy_workers_;
    work_finished_.notify_all();
  }
}

void Server::refuse(const Request& request, Response& response, int status,
                    const std::string& reason) const {
  response = Response();
  response.status = status;
  try {
    (error_handler_ ? error_handler_ : default_error_handler)(request, response, reason);
  } catch (...) {
    default_error_handler(request, response, reason);
  }
}

void Server::route(Request& request, Response& response) const {
  if (request.path.size() > kMaxPathBytes) {
    refuse(request, response, 414,
           "the request path exceeds " + std::to_string(kMaxPathBytes) + " bytes");
    return;
  }
  for (const auto& r : routes_) {
    if (r.method != request.method || !std::regex_match(request.path, request.matches, r.pattern)) {
      continue;
    }
    try {
      r.handler(request, response);
    } catch (const std::exception& e) {
      refuse(request, response, 500, std::string("internal error: ") + e.what());
    }
    return;
  }
  refuse(request, response, 404,
         "no route for " + request.method + " " + request.path.substr(0, 256));
}

void Server::serve(std::unique_ptr<Connection> connection) {
  const int fd = connection->fd;
  RequestReader& reader = connection->reader;
  Request& request = reader.request();
  request.remote_addr = connection->address;
  request.remote_port = connection->port;
  request.is_connection_closed = [fd] { return peer_closed(fd); };
  Response response;
  int refused = connection->forced_status;
  std::string reason = connection->forced_reason;
  if (!refused && reader.error_status() != 0) {
    refused = reader.error_status();
    reason = reader.error_message();
  }
  if (refused) {
    refuse(request, response, refused, reason);
  } else {
    route(request, response);
  }
  // A refused request may have left body bytes unread, so nothing after it can be parsed.
  const bool unusable = refused != 0 && (connection->forced_status || reader.connection_unusable());
  WriteOptions options;
  options.http10 = request.version == "HTTP/1.0";
  options.timeout = settings_.write_timeout;
  options.close_after = unusable || stopping_ || client_wants_close(request) ||
                        iequals(response.get_header_value("Connection"), "close") ||
                        (options.http10 && response.is_streaming());
  const bool written = write_response(fd, response, options);
  if (written && unusable) {
    // Lingering close: the client sees the answer, then its unread upload is discarded.
    ::shutdown(fd, SHUT_WR);
    connection->draining = true;
    connection->drain_deadline = Clock::now() + settings_.linger_total;
    connection->last_byte = Clock::now();
    connection->input.clear();
    release(std::move(connection), true);
    return;
  }
  if (!written || options.close_after) {
    release(std::move(connection), false);
    return;
  }
  reader.reset();
  connection->receiving = false;
  connection->continue_sent = false;
  connection->started = Clock::now();
  release(std::move(connection), true);
}

void Server::release(std::unique_ptr<Connection> connection, bool keep_open) {
  std::lock_guard<std::mutex> lock(mutex_);
  serving_.erase(connection->fd);
  if (keep_open && !stopping_) {
    returned_.push_back(std::move(connection));
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof one);
    return;
  }
  close(connection->fd);
  count_closed(connection->address);
}

}  // namespace qmlx::http
