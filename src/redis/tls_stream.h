// TlsContext: TLS for the Redis client (OpenSSL 3). One context per client holds what every
// connection shares: the trusted CAs (tls_ca_file, or the system's default store), the optional
// client certificate and key (mutual TLS), TLS 1.2 at least. handshake() turns a connected
// socket into a ByteStream that verifies the server's certificate chain and its name (the
// node's host, or server_name when set, which is also sent as SNI). Reads and writes go through
// SSL_read / SSL_write straight from and into the caller's memory, under the socket's timeouts.
#pragma once

#include <memory>
#include <string>

#include "redis/byte_stream.h"
#include "redis/socket_stream.h"

typedef struct ssl_ctx_st SSL_CTX;

namespace qmlx {

struct TlsOptions {
  bool enabled = false;
  std::string ca_file;      // PEM CA certificates to trust ("" = the system's default store)
  std::string cert_file;    // PEM client certificate chain, for mutual TLS ("" = none)
  std::string key_file;     // its private key
  std::string server_name;  // the name to verify and send as SNI ("" = each node's host)
};

class TlsContext {
 public:
  // Loads the CA, certificate and key files; a bad or unreadable one is an InvalidArgument
  // naming it.
  static Status create(const TlsOptions& options, std::shared_ptr<TlsContext>* out);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // Runs the handshake over `socket` to `host` (bounded by the socket's timeouts). A server
  // whose certificate does not verify is an IOError saying why.
  Status handshake(std::unique_ptr<SocketStream> socket, const std::string& host,
                   std::unique_ptr<ByteStream>* out) const;

 private:
  explicit TlsContext(SSL_CTX* ctx, std::string server_name)
      : ctx_(ctx), server_name_(std::move(server_name)) {}
  SSL_CTX* ctx_;
  std::string server_name_;
};

}  // namespace qmlx
