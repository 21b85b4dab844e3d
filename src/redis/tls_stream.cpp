#include "redis/tls_stream.h"

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace qmlx {
namespace {

// The oldest OpenSSL error queued on this thread, as its reason, and the queue cleared.
std::string openssl_error() {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "unknown error";
  const char* reason = ERR_reason_error_string(code);
  if (reason != nullptr) return reason;
  char text[256];
  ERR_error_string_n(code, text, sizeof(text));
  return text;
}

// The socket BIO OpenSSL would use, but sending with MSG_NOSIGNAL: a server that hung up is a
// failed write, never a SIGPIPE that kills the process. A socket timeout (EAGAIN on a blocking
// socket) becomes a retry, which TlsStream reports as "timed out".
int socket_of(BIO* bio) { return int(reinterpret_cast<intptr_t>(BIO_get_data(bio))); }

int bio_write(BIO* bio, const char* data, int size) {
  BIO_clear_retry_flags(bio);
  for (;;) {
    const ssize_t n = ::send(socket_of(bio), data, size_t(size), MSG_NOSIGNAL);
    if (n >= 0) return int(n);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) BIO_set_retry_write(bio);
    return -1;
  }
}

int bio_read(BIO* bio, char* out, int size) {
  BIO_clear_retry_flags(bio);
  for (;;) {
    const ssize_t n = ::recv(socket_of(bio), out, size_t(size), 0);
    if (n >= 0) return int(n);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) BIO_set_retry_read(bio);
    return -1;
  }
}

long bio_ctrl(BIO*, int command, long, void*) { return command == BIO_CTRL_FLUSH ? 1 : 0; }

int bio_create(BIO* bio) {
  BIO_set_init(bio, 1);
  return 1;
}

BIO_METHOD* socket_method() {
  static BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "qmlx socket");
    BIO_meth_set_write(m, bio_write);
    BIO_meth_set_read(m, bio_read);
    BIO_meth_set_ctrl(m, bio_ctrl);
    BIO_meth_set_create(m, bio_create);
    return m;
  }();
  return method;
}

bool is_ip_address(const std::string& name) {
  in6_addr address;
  return inet_pton(AF_INET, name.c_str(), &address) == 1 ||
         inet_pton(AF_INET6, name.c_str(), &address) == 1;
}

class TlsStream final : public ByteStream {
 public:
  TlsStream(std::unique_ptr<SocketStream> socket, SSL* ssl)
      : socket_(std::move(socket)), ssl_(ssl) {}
  ~TlsStream() override { SSL_free(ssl_); }

  SSL* ssl() const { return ssl_; }

  Status write_all(std::span<const std::string_view> pieces) override {
    ERR_clear_error();
    for (std::string_view piece : pieces) {
      size_t done = 0;
      while (done < piece.size()) {  // blocking, without partial writes: all or a failure
        size_t written = 0;
        const int r = SSL_write_ex(ssl_, piece.data() + done, piece.size() - done, &written);
        if (r <= 0) return failure(r, "write");
        done += written;
      }
    }
    return Status::Ok();
  }

  Status read_some(std::span<uint8_t> out, size_t* got) override {
    ERR_clear_error();
    const int r = SSL_read_ex(ssl_, out.data(), out.size(), got);
    return r > 0 ? Status::Ok() : failure(r, "read");
  }

  // Why the last SSL call on this stream returned `result`.
  Status failure(int result, const char* what) {
    const int error = SSL_get_error(ssl_, result);
    const int saved_errno = errno;
    switch (error) {
      case SSL_ERROR_WANT_READ:
      case SSL_ERROR_WANT_WRITE:
        ERR_clear_error();
        return Status::IOError(std::string(what) + " timed out");
      case SSL_ERROR_ZERO_RETURN:
        return Status::IOError("connection closed by the server");
      case SSL_ERROR_SYSCALL:
        ERR_clear_error();
        if (saved_errno == 0) return Status::IOError("connection closed by the server");
        return Status::IOError(std::string(what) + ": " + std::strerror(saved_errno));
      default:
        if (ERR_GET_REASON(ERR_peek_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
          ERR_clear_error();
          return Status::IOError("connection closed by the server");
        }
        return Status::IOError(std::string("TLS ") + what + ": " + openssl_error());
    }
  }

 private:
  std::unique_ptr<SocketStream> socket_;  // closed after ssl_ is freed
  SSL* ssl_;
};

}  // namespace

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

Status TlsContext::create(const TlsOptions& options, std::shared_ptr<TlsContext>* out) {
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) return Status::IOError("TLS: " + openssl_error());
  std::shared_ptr<TlsContext> context(new TlsContext(ctx, options.server_name));
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  if (!options.ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(ctx, options.ca_file.c_str(), nullptr) != 1) {
      return Status::InvalidArgument("tls_ca_file " + options.ca_file +
                                     ": no CA certificate read: " + openssl_error());
    }
  } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
    return Status::InvalidArgument("TLS: the system's CA store: " + openssl_error());
  }
  if (options.cert_file.empty() != options.key_file.empty()) {
    return Status::InvalidArgument("tls_cert_file and tls_key_file go together");
  }
  if (!options.cert_file.empty()) {
    if (SSL_CTX_use_certificate_chain_file(ctx, options.cert_file.c_str()) != 1) {
      return Status::InvalidArgument("tls_cert_file " + options.cert_file +
                                     ": no certificate read: " + openssl_error());
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, options.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
      if (ERR_GET_REASON(ERR_peek_error()) == X509_R_KEY_VALUES_MISMATCH) {
        ERR_clear_error();
        return Status::InvalidArgument("tls_key_file " + options.key_file +
                                       " is not the key of tls_cert_file " + options.cert_file);
      }
      return Status::InvalidArgument("tls_key_file " + options.key_file +
                                     ": no private key read: " + openssl_error());
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
      return Status::InvalidArgument("tls_key_file " + options.key_file +
                                     " is not the key of tls_cert_file " + options.cert_file);
    }
  }
  *out = std::move(context);
  return Status::Ok();
}

Status TlsContext::handshake(std::unique_ptr<SocketStream> socket, const std::string& host,
                             std::unique_ptr<ByteStream>* out) const {
  ERR_clear_error();
  SSL* ssl = SSL_new(ctx_);
  if (ssl == nullptr) return Status::IOError("TLS: " + openssl_error());
  const int fd = socket->fd();
  auto stream = std::make_unique<TlsStream>(std::move(socket), ssl);
  BIO* bio = BIO_new(socket_method());
  if (bio == nullptr) return Status::IOError("TLS: " + openssl_error());
  BIO_set_data(bio, reinterpret_cast<void*>(intptr_t(fd)));
  SSL_set_bio(ssl, bio, bio);
  const std::string& name = server_name_.empty() ? host : server_name_;
  if (is_ip_address(name)) {  // no SNI for an address; the certificate must name the IP
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str());
  } else if (SSL_set1_host(ssl, name.c_str()) != 1 ||
             SSL_set_tlsext_host_name(ssl, name.c_str()) != 1) {
    return Status::IOError("TLS: bad server name \"" + name + "\"");
  }
  const int r = SSL_connect(ssl);
  if (r != 1) {
    const long verify = SSL_get_verify_result(ssl);
    if (verify != X509_V_OK) {
      ERR_clear_error();
      return Status::IOError(std::string("TLS handshake: the server's certificate is not valid "
                                         "for \"") +
                             name + "\": " + X509_verify_cert_error_string(verify) +
                             " (see tls_ca_file and tls_server_name)");
    }
    const Status s = stream->failure(r, "handshake");
    return Status::IOError(s.message().starts_with("TLS") ? s.message()
                                                          : "TLS handshake: " + s.message());
  }
  *out = std::move(stream);
  return Status::Ok();
}

}  // namespace qmlx
