// HTTP request and response as the route handlers see them. Header names compare without
// case (RFC 9110). A response is either a whole body or a stream that a provider writes to a
// DataSink while the handler's worker thread holds the connection.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <regex>
#include <string>
#include <string_view>

namespace qmlx::http {

struct CaseInsensitiveLess {
  bool operator()(const std::string& a, const std::string& b) const;
};
using Headers = std::multimap<std::string, std::string, CaseInsensitiveLess>;

struct Request {
  std::string method;
  std::string target;   // as sent: path and query
  std::string path;     // the target before '?'
  std::string query;    // after '?', without it
  std::string version;  // "HTTP/1.1" or "HTTP/1.0"
  Headers headers;
  std::string body;
  std::string remote_addr;
  int remote_port = -1;
  std::smatch matches;  // the route pattern's groups, matched against `path`
  // True once the client has closed or reset its connection: a handler that waits long for
  // a result polls it to stop work nobody will read. Always false when not set.
  std::function<bool()> is_connection_closed = [] { return false; };

  bool has_header(std::string_view name) const;
  // The first value of header `name`, or "".
  std::string get_header_value(std::string_view name) const;
};

// Where a streaming response writes. write() returns false once the client is gone or a
// write timed out; the provider then stops.
class DataSink {
 public:
  virtual ~DataSink() = default;
  virtual bool write(const char* data, size_t size) = 0;
  // Ends the stream (the last chunk); nothing may be written after it.
  virtual void done() = 0;
};

struct Response {
  int status = -1;  // -1: not set, sent as 200
  Headers headers;
  std::string body;

  // Writes the streamed body; returns false to abort (the connection is then closed).
  using ContentProvider = std::function<bool(size_t offset, DataSink& sink)>;
  // Called once the stream ended, with whether the provider finished it.
  using ContentProviderReleaser = std::function<void(bool success)>;
  ContentProvider content_provider;
  ContentProviderReleaser content_provider_releaser;

  // Replaces any header of that name.
  void set_header(std::string_view name, std::string_view value);
  bool has_header(std::string_view name) const;
  std::string get_header_value(std::string_view name) const;
  void set_content(std::string content, std::string_view content_type);
  // A streamed body of unknown length (chunked over HTTP/1.1, ended by close over HTTP/1.0).
  void set_chunked_content_provider(std::string_view content_type, ContentProvider provider,
                                    ContentProviderReleaser releaser = nullptr);
  bool is_streaming() const { return static_cast<bool>(content_provider); }
};

// "OK", "Not Found", ... ("Unknown" for a code without one).
const char* reason_phrase(int status);

}  // namespace qmlx::http
