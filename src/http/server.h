// Server: an HTTP/1.1 server for the API and metrics ports.
//
// One event-loop thread owns every connection while it is idle or while its request is
// arriving: it reads heads and bodies without blocking, applies the RequestReader's limits,
// and enforces deadlines (a head must arrive within head_timeout of its first byte, a body
// must not stall for body_idle_timeout). Only a complete request is handed to a worker
// thread, which runs the route's handler and writes the response (streamed or whole); the
// connection then returns to the event loop for its next (possibly pipelined) request. So
// slow, idle or hostile clients cost a file descriptor each, never a thread, and cannot
// starve /health. Connections are bounded per client address and in total: a new one evicts
// the same address's oldest connection that has no request being served.
//
// cpp-httplib 0.11 (Debian 12) ties one thread to each connection for its whole life, has
// no head deadline, ignores its body limit for chunked bodies, drops pipelined requests and
// binds with SO_REUSEPORT; hence this transport.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "http/message.h"
#include "http/request_reader.h"

namespace qmlx::http {

struct ServerSettings {
  ReadLimits read;
  std::chrono::milliseconds head_timeout{30'000};
  std::chrono::milliseconds body_idle_timeout{60'000};
  std::chrono::milliseconds keep_alive_timeout{65'000};
  std::chrono::milliseconds write_timeout{600'000};
  // After refusing a body it did not read, the connection is drained for at most this long
  // before it closes, so the client sees the answer rather than a reset.
  std::chrono::milliseconds linger_idle{2'000};
  std::chrono::milliseconds linger_total{5'000};
  size_t max_connections = 4096;
  size_t max_connections_per_address = 256;
  size_t worker_threads = 64;
};

class Server {
 public:
  using Handler = std::function<void(const Request&, Response&)>;
  // Fills the answer to a request no route takes (404) or that the transport refused (400,
  // 408, 413, 431, 501, 505): the status is set, `reason` says why.
  using ErrorHandler = std::function<void(const Request&, Response&, const std::string& reason)>;

  explicit Server(ServerSettings settings = {});
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Routes: `pattern` must match the whole path; its groups land in Request::matches.
  void Get(const std::string& pattern, Handler handler);
  void Post(const std::string& pattern, Handler handler);
  void Put(const std::string& pattern, Handler handler);
  void Delete(const std::string& pattern, Handler handler);
  void Patch(const std::string& pattern, Handler handler);
  void set_error_handler(ErrorHandler handler) { error_handler_ = std::move(handler); }

  // Binds and listens (port 0 picks a free port); returns the port. Throws qmlx::Error when
  // the address is in use or cannot be bound (no SO_REUSEPORT: a second server on the same
  // port fails here instead of splitting the traffic).
  int bind(const std::string& host, int port);
  // Serves in background threads.
  void start();
  // Stops accepting and reading: idle connections close now; requests being served go on.
  void stop_accepting();
  // After stop_accepting: waits up to `grace` for the requests being served, then cuts their
  // connections, and joins every thread. Safe to call more than once, or without start().
  void shutdown(std::chrono::milliseconds grace);

  struct Stats {
    size_t open_connections = 0;
    size_t busy_workers = 0;
    uint64_t evicted_connections = 0;  // closed for a newer one over the per-address limit
    uint64_t timed_out_connections = 0;
  };
  Stats stats() const;

 private:
  struct Connection;
  struct Route {
    std::string method;
    std::regex pattern;
    Handler handler;
  };

  void add_route(const char* method, const std::string& pattern, Handler handler);
  void event_loop();
  // Accepts what is pending; false when out of descriptors with none to free.
  bool accept_connections();
  bool make_room_for(const std::string& address);
  void read_from(Connection& connection);
  void advance(int fd);
  void check_deadlines();
  void dispatch(int fd);
  void close_owned(int fd);
  void take_back_returned();
  void worker_loop();
  void serve(std::unique_ptr<Connection> connection);
  void route(Request& request, Response& response) const;
  // Replaces `response` with the error handler's answer for `status`.
  void refuse(const Request& request, Response& response, int status,
              const std::string& reason) const;
  // A connection closed: its address's count and the total drop (mutex_ held).
  void count_closed(const std::string& address);
  void release(std::unique_ptr<Connection> connection, bool keep_open);

  ServerSettings settings_;
  std::vector<Route> routes_;
  ErrorHandler error_handler_;

  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::thread loop_thread_;
  std::vector<std::thread> workers_;
  std::atomic<bool> stopping_{false};

  // Owned by the event loop thread: connections idle or receiving a request.
  std::unordered_map<int, std::unique_ptr<Connection>> owned_;
  uint64_t next_sequence_ = 0;

  mutable std::mutex mutex_;  // guards everything below
  std::condition_variable work_ready_;
  std::condition_variable work_finished_;
  std::deque<std::unique_ptr<Connection>> queue_;      // complete requests awaiting a worker
  std::vector<std::unique_ptr<Connection>> returned_;  // served, back to the event loop
  std::unordered_set<int> serving_;                    // descriptors a worker holds
  std::unordered_map<std::string, size_t> per_address_;
  size_t open_connections_ = 0;
  size_t busy_workers_ = 0;
  bool workers_exit_ = false;
  uint64_t evicted_ = 0;
  uint64_t timed_out_ = 0;
};

}  // namespace qmlx::http
