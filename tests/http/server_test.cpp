#include "http/server.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"

namespace qmlx::http {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

int connect_to(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

void send_text(int fd, const std::string& text) {
  ASSERT_EQ(send(fd, text.data(), text.size(), MSG_NOSIGNAL), ssize_t(text.size()));
}

// Reads until the server closes or `timeout` passes (or `until` appears in what was read).
std::string read_all(int fd, std::chrono::milliseconds timeout = 5000ms,
                     const std::string& until = "") {
  std::string out;
  const auto deadline = Clock::now() + timeout;
  char buffer[4096];
  while (Clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    int left =
        int(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
    if (poll(&p, 1, std::max(left, 1)) <= 0) break;
    ssize_t n = recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    out.append(buffer, size_t(n));
    if (!until.empty() && out.find(until) != std::string::npos) break;
  }
  return out;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class HttpServerTest : public ::testing::Test {
 protected:
  void start(ServerSettings settings = {}) {
    server_ = std::make_unique<Server>(settings);
    server_->Get("/hello",
                 [](const Request&, Response& res) { res.set_content("hi", "text/plain"); });
    server_->Post("/echo", [](const Request& req, Response& res) {
      res.set_content(std::to_string(req.body.size()) + ":" + req.body.substr(0, 16), "text/plain");
    });
    server_->Get("/stream", [](const Request&, Response& res) {
      res.set_chunked_content_provider("text/plain", [](size_t, DataSink& sink) {
        sink.write("ab", 2);
        sink.write("cd", 2);
        sink.done();
        return true;
      });
    });
    server_->Post("/wait-for-disconnect", [this](const Request& req, Response& res) {
      const auto deadline = Clock::now() + 5s;
      while (Clock::now() < deadline && !req.is_connection_closed())
        std::this_thread::sleep_for(10ms);
      saw_disconnect_ = req.is_connection_closed();
      res.set_content("late", "text/plain");
    });
    port_ = server_->bind("127.0.0.1", 0);
    server_->start();
  }
  void TearDown() override {
    if (server_) server_->shutdown(1000ms);
  }

  std::string exchange(const std::string& text, std::chrono::milliseconds timeout = 5000ms) {
    int fd = connect_to(port_);
    EXPECT_GE(fd, 0);
    send_text(fd, text);
    std::string answer = read_all(fd, timeout);
    close(fd);
    return answer;
  }

  std::unique_ptr<Server> server_;
  int port_ = 0;
  std::atomic<bool> saw_disconnect_{false};
};

TEST_F(HttpServerTest, AnswersPipelinedRequestsInOrder) {
  start();
  std::string answer = exchange(
      "GET /hello HTTP/1.1\r\n\r\nPOST /echo HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"
      "GET /hello HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(count(answer, "HTTP/1.1 200 OK"), 3u) << answer;
  EXPECT_NE(answer.find("3:abc"), std::string::npos);
  EXPECT_EQ(count(answer, "Connection: close"), 1u);
}

TEST_F(HttpServerTest, APostWithoutBodyOrLengthIsAnsweredAtOnce) {
  start();
  const auto begin = Clock::now();
  int fd = connect_to(port_);
  send_text(fd, "POST /echo HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string answer = read_all(fd, 5000ms, "0:");
  close(fd);
  EXPECT_NE(answer.find("HTTP/1.1 200 OK"), std::string::npos) << answer;
  EXPECT_LT(Clock::now() - begin, 2s);
}

TEST_F(HttpServerTest, SlowHeadsOnHundredsOfConnectionsDoNotDelayANormalRequest) {
  ServerSettings settings;
  settings.worker_threads = 4;  // far fewer threads than slow connections
  start(settings);
  std::vector<int> slow;
  for (int i = 0; i < 500; ++i) {
    int fd = connect_to(port_);
    ASSERT_GE(fd, 0) << i;
    send_text(fd, "POST /echo HTTP/1.1\r\nHost: x\r\n");
    slow.push_back(fd);
  }
  std::this_thread::sleep_for(200ms);
  const auto begin = Clock::now();
  std::string answer = exchange("GET /hello HTTP/1.1\r\nConnection: close\r\n\r\n", 3000ms);
  EXPECT_LT(Clock::now() - begin, 2s);
  EXPECT_NE(answer.find("HTTP/1.1 200 OK"), std::string::npos);
  // The per-address limit closed the oldest slow connections to make room.
  EXPECT_GT(server_->stats().evicted_connections, 0u);
  EXPECT_LE(server_->stats().open_connections, settings.max_connections_per_address);
  for (int fd : slow) close(fd);
}

TEST_F(HttpServerTest, AHeadThatNeverEndsGets408AfterTheDeadline) {
  ServerSettings settings;
  settings.head_timeout = 300ms;
  start(settings);
  int fd = connect_to(port_);
  send_text(fd, "POST /echo HTTP/1.1\r\nHost: x\r\n");
  std::string answer = read_all(fd, 3000ms);
  close(fd);
  EXPECT_NE(answer.find("HTTP/1.1 408"), std::string::npos) << answer;
  EXPECT_NE(answer.find("did not arrive"), std::string::npos);
  EXPECT_EQ(server_->stats().timed_out_connections, 1u);
}

TEST_F(HttpServerTest, AChunkedBodyOverTheLimitIs413AndTheServerGoesOn) {
  ServerSettings settings;
  settings.read.max_body_bytes = 1024;
  start(settings);
  int fd = connect_to(port_);
  send_text(fd, "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
  std::string chunk = "400\r\n" + std::string(1024, 'x') + "\r\n";
  std::string answer;
  for (int i = 0; i < 64 && answer.empty(); ++i) {
    send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL);
    answer = read_all(fd, 20ms);
  }
  answer += read_all(fd, 3000ms);
  close(fd);
  EXPECT_NE(answer.find("HTTP/1.1 413"), std::string::npos) << answer;
  EXPECT_EQ(count(answer, "Connection: close"), 1u);
  EXPECT_NE(exchange("GET /hello HTTP/1.1\r\nConnection: close\r\n\r\n").find("200 OK"),
            std::string::npos);
}

TEST_F(HttpServerTest, BadFramingAndBigHeadsGetTheirOwnStatus) {
  start();
  std::string negative = exchange("POST /echo HTTP/1.1\r\nContent-Length: -5\r\n\r\n");
  EXPECT_NE(negative.find("HTTP/1.1 400"), std::string::npos) << negative;
  EXPECT_EQ(count(negative, "Connection: close"), 1u) << negative;
  std::string big =
      exchange("GET /hello HTTP/1.1\r\nX-Big: " + std::string(70'000, 'a') + "\r\n\r\n");
  EXPECT_NE(big.find("HTTP/1.1 431"), std::string::npos) << big.substr(0, 200);
  std::string unknown = exchange("GET /nowhere HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_NE(unknown.find("HTTP/1.1 404"), std::string::npos);
}

TEST_F(HttpServerTest, AnHttp10ClientGetsAStreamEndedByClose) {
  start();
  std::string answer = exchange("GET /stream HTTP/1.0\r\n\r\n");
  EXPECT_NE(answer.find("HTTP/1.1 200 OK"), std::string::npos) << answer;
  EXPECT_EQ(answer.find("Transfer-Encoding"), std::string::npos) << answer;
  EXPECT_NE(answer.find("\r\n\r\nabcd"), std::string::npos) << answer;
  std::string chunked = exchange("GET /stream HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_NE(chunked.find("Transfer-Encoding: chunked"), std::string::npos);
  EXPECT_NE(chunked.find("2\r\nab\r\n2\r\ncd\r\n0\r\n\r\n"), std::string::npos) << chunked;
}

TEST_F(HttpServerTest, ExpectContinueGetsTheGoAheadThenTheAnswer) {
  start();
  int fd = connect_to(port_);
  send_text(fd,
            "POST /echo HTTP/1.1\r\nContent-Length: 4\r\nExpect: 100-continue\r\nConnection: "
            "close\r\n\r\n");
  std::string go = read_all(fd, 2000ms, "\r\n\r\n");
  EXPECT_EQ(go, "HTTP/1.1 100 Continue\r\n\r\n");
  send_text(fd, "data");
  std::string answer = read_all(fd, 2000ms);
  close(fd);
  EXPECT_NE(answer.find("4:data"), std::string::npos) << answer;
}

TEST_F(HttpServerTest, AHandlerSeesItsClientHangUp) {
  start();
  int fd = connect_to(port_);
  send_text(fd, "POST /wait-for-disconnect HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
  std::this_thread::sleep_for(100ms);
  close(fd);
  for (int i = 0; i < 300 && !saw_disconnect_; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(saw_disconnect_);
}

TEST_F(HttpServerTest, ASecondServerCannotTakeAPortInUse) {
  start();
  Server other;
  EXPECT_THROW(other.bind("127.0.0.1", port_), Error);
}

TEST_F(HttpServerTest, IdleKeepAliveConnectionsCloseAfterTheirTimeout) {
  ServerSettings settings;
  settings.keep_alive_timeout = 200ms;
  start(settings);
  int fd = connect_to(port_);
  const auto begin = Clock::now();
  send_text(fd, "GET /hello HTTP/1.1\r\n\r\n");
  std::string answer = read_all(fd, 3000ms);  // ends when the server closes the idle connection
  close(fd);
  EXPECT_NE(answer.find("200 OK"), std::string::npos);
  EXPECT_GE(Clock::now() - begin, 200ms);
  for (int i = 0; i < 100 && server_->stats().open_connections > 0; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(server_->stats().open_connections, 0u);
}

TEST_F(HttpServerTest, ShutdownWithIdleAndSlowConnectionsIsPrompt) {
  start();
  std::vector<int> fds;
  for (int i = 0; i < 20; ++i) {
    fds.push_back(connect_to(port_));
    send_text(fds.back(), i % 2 ? "GET /hel" : "GET /hello HTTP/1.1\r\n\r\n");
  }
  std::this_thread::sleep_for(100ms);
  const auto begin = Clock::now();
  server_->shutdown(1000ms);
  EXPECT_LT(Clock::now() - begin, 1s);
  for (int fd : fds) close(fd);
}

}  // namespace
}  // namespace qmlx::http
