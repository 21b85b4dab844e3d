#include "http/response_writer.h"

#include <strings.h>

#include <cstdio>

#include "http/socket_io.h"

namespace qmlx::http {
namespace {

bool is_framing_header(const std::string& name) {
  return strcasecmp(name.c_str(), "Content-Length") == 0 ||
         strcasecmp(name.c_str(), "Transfer-Encoding") == 0 ||
         strcasecmp(name.c_str(), "Connection") == 0;
}

std::string response_head(const Response& response, const WriteOptions& options) {
  const int status = response.status < 0 ? 200 : response.status;
  std::string head = "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) + "\r\n";
  for (const auto& [name, value] : response.headers) {
    if (!is_framing_header(name)) head += name + ": " + value + "\r\n";
  }
  if (!response.is_streaming()) {
    head += "Content-Length: " + std::to_string(response.body.size()) + "\r\n";
  } else if (!options.http10) {
    head += "Transfer-Encoding: chunked\r\n";
  }
  if (options.close_after) {
    head += "Connection: close\r\n";
  } else if (options.http10) {
    head += "Connection: keep-alive\r\n";
  }
  return head + "\r\n";
}

class SocketSink : public DataSink {
 public:
  SocketSink(int fd, const WriteOptions& options) : fd_(fd), options_(options) {}

  bool write(const char* data, size_t size) override {
    if (failed_ || finished_) return false;
    if (size == 0) return true;
    if (options_.http10) return record(send_all(fd_, data, size, options_.timeout));
    char size_line[24];
    int n = std::snprintf(size_line, sizeof size_line, "%zx\r\n", size);
    std::string chunk;
    chunk.reserve(size_t(n) + size + 2);
    chunk.append(size_line, size_t(n)).append(data, size).append("\r\n");
    return record(send_all(fd_, chunk.data(), chunk.size(), options_.timeout));
  }

  void done() override {
    if (failed_ || finished_) return;
    finished_ = true;
    if (!options_.http10) record(send_all(fd_, "0\r\n\r\n", 5, options_.timeout));
  }

  bool failed() const { return failed_; }
  bool finished() const { return finished_; }

 private:
  bool record(bool ok) {
    failed_ = failed_ || !ok;
    return ok;
  }

  int fd_;
  const WriteOptions& options_;
  bool failed_ = false;
  bool finished_ = false;
};

}  // namespace

bool write_response(int fd, Response& response, const WriteOptions& options) {
  std::string head = response_head(response, options);
  if (!response.is_streaming()) {
    if (response.body.size() < 64 * 1024) {
      head += response.body;
      return send_all(fd, head.data(), head.size(), options.timeout);
    }
    return send_all(fd, head.data(), head.size(), options.timeout) &&
           send_all(fd, response.body.data(), response.body.size(), options.timeout);
  }
  SocketSink sink(fd, options);
  bool provided = send_all(fd, head.data(), head.size(), options.timeout);
  if (provided) {
    try {
      provided = response.content_provider(0, sink);
    } catch (...) {
      provided = false;
    }
  }
  if (provided && !sink.finished()) sink.done();
  const bool success = provided && !sink.failed();
  if (response.content_provider_releaser) response.content_provider_releaser(success);
  return success;
}

}  // namespace qmlx::http
