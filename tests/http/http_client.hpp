// SPDX-License-Identifier: Apache-2.0
// http_client — a plain blocking HTTP/1.1 client for the tests: it shares no code with
// the server, frames responses itself (Content-Length, chunked, until close) and
// never waits forever (every receive has a timeout).
#pragma once

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#ifdef RINGIO_HTTP_TEST_TLS
#include <openssl/ssl.h>

#include <csignal>

#include "tls/test_certs.hpp"
#endif

namespace ringio_test {

struct http_reply {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  /// The first header called `name` (any case), or "".
  [[nodiscard]] std::string header(std::string_view name) const {
    for (const auto& [n, v] : headers)
      if (same_name(n, name)) return v;
    return {};
  }
  [[nodiscard]] bool has_header(std::string_view name) const {
    for (const auto& [n, v] : headers)
      if (same_name(n, name)) return true;
    return false;
  }

 private:
  static bool same_name(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
        return false;
    return true;
  }
};

class http_client {
 public:
  /// Connects to 127.0.0.1:port; receives time out after `timeout_ms`.
  explicit http_client(std::uint16_t port, int timeout_ms = 5000) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(fd_);
      fd_ = -1;
      return;
    }
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
#ifdef RINGIO_HTTP_TEST_TLS
    // The same tests over HTTPS: a blocking OpenSSL client on the socket.
    ssl_ = SSL_new(tls_context());
    SSL_set_fd(ssl_, fd_);
    SSL_set_tlsext_host_name(ssl_, "localhost");
    SSL_set1_host(ssl_, "localhost");
    int r;
    do r = SSL_connect(ssl_);
    while (r <= 0 && SSL_get_error(ssl_, r) == SSL_ERROR_WANT_READ && errno == EINTR);
    if (r != 1) {
      SSL_free(std::exchange(ssl_, nullptr));
      ::close(fd_);
      fd_ = -1;
    }
#endif
  }
  ~http_client() {
#ifdef RINGIO_HTTP_TEST_TLS
    if (ssl_ != nullptr) SSL_free(ssl_);
#endif
    if (fd_ >= 0) ::close(fd_);
  }
  http_client(const http_client&) = delete;
  http_client& operator=(const http_client&) = delete;

  [[nodiscard]] bool connected() const { return fd_ >= 0; }
  [[nodiscard]] int fd() const { return fd_; }

  bool send(std::string_view data) {
    while (!data.empty()) {
      ssize_t n = raw_send(data.data(), data.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

  /// The next response; nullopt on timeout, close or garbage. `head_request`: a reply
  /// to HEAD (no body whatever the fields say).
  std::optional<http_reply> read_reply(bool head_request = false) {
    std::size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos)
      if (!fill()) return std::nullopt;
    http_reply r;
    std::string head = buf_.substr(0, end);
    buf_.erase(0, end + 4);
    if (head.size() < 12 || head.compare(0, 9, "HTTP/1.1 ") != 0) return std::nullopt;
    r.status = std::stoi(head.substr(9, 3));
    for (std::size_t pos = head.find("\r\n"); pos != std::string::npos;) {
      std::size_t next = head.find("\r\n", pos + 2);
      std::string line = head.substr(pos + 2, next == std::string::npos ? std::string::npos : next - pos - 2);
      auto colon = line.find(':');
      if (colon == std::string::npos) return std::nullopt;
      std::string value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.erase(0, 1);
      r.headers.emplace_back(line.substr(0, colon), value);
      pos = next;
    }
    if (head_request || r.status == 304 || r.status == 204 || r.status / 100 == 1) return r;
    if (!r.header("Content-Length").empty()) {
      std::size_t n = std::stoul(r.header("Content-Length"));
      if (!take(n, r.body)) return std::nullopt;
    } else if (r.header("Transfer-Encoding") == "chunked") {
      for (;;) {
        std::string line;
        if (!take_line(line)) return std::nullopt;
        std::size_t n = std::stoul(line, nullptr, 16);
        if (n == 0) break;
        std::string part;
        if (!take(n + 2, part)) return std::nullopt;
        r.body += part.substr(0, n);
      }
      std::string empty;
      if (!take_line(empty)) return std::nullopt;
    } else {
      while (fill()) {
      }
      r.body = std::move(buf_);
      buf_.clear();
    }
    return r;
  }

  /// Sends `request` and reads one reply.
  std::optional<http_reply> exchange(std::string_view request, bool head_request = false) {
    if (!send(request)) return std::nullopt;
    return read_reply(head_request);
  }

  /// Whether the server closed the connection (EOF) within the receive timeout, with
  /// nothing unread before it.
  bool closed_by_peer() {
    if (!buf_.empty()) return false;
    char c;
    ssize_t n;
    do n = raw_recv(&c, 1);
    while (n < 0 && errno == EINTR);
    return n == 0 || (n < 0 && errno == ECONNRESET);
  }
  /// Raw bytes received so far and not consumed.
  std::string& buffered() { return buf_; }
  /// Receives once more; false on EOF, error or timeout.
  bool fill() {
    char tmp[65536];
    ssize_t n;
    // io_uring task work queued to this thread (a ring it created and closed) interrupts
    // a receive that has a timeout with EINTR instead of restarting it.
    do n = raw_recv(tmp, sizeof tmp);
    while (n < 0 && errno == EINTR);
    if (n <= 0) return false;
    buf_.append(tmp, static_cast<std::size_t>(n));
    return true;
  }

 private:
#ifdef RINGIO_HTTP_TEST_TLS
  static SSL_CTX* tls_context() {
    static SSL_CTX* ctx = [] {
      // OpenSSL writes with write(2): its alert after a server closed before the
      // handshake (over the connection limit) must not kill the test with SIGPIPE.
      std::signal(SIGPIPE, SIG_IGN);
      SSL_CTX* c = SSL_CTX_new(TLS_client_method());
      SSL_CTX_load_verify_locations(c, test_certs::get().ca.c_str(), nullptr);
      SSL_CTX_set_verify(c, SSL_VERIFY_PEER, nullptr);
      return c;
    }();
    return ctx;
  }
  // send(2) and recv(2) through TLS: the same results (a close_notify or a cut
  // connection reads as 0, a receive timeout as -1 with errno EAGAIN).
  ssize_t raw_send(const char* p, std::size_t n) {
    if (ssl_ == nullptr) return (errno = EBADF), -1;
    int r = SSL_write(ssl_, p, static_cast<int>(n));
    return r > 0 ? r : -1;
  }
  ssize_t raw_recv(char* p, std::size_t n) {
    if (ssl_ == nullptr) return (errno = EBADF), -1;
    errno = 0;
    int r = SSL_read(ssl_, p, static_cast<int>(n));
    if (r > 0) return r;
    int e = SSL_get_error(ssl_, r);
    if (e == SSL_ERROR_ZERO_RETURN) return 0;
    if (e == SSL_ERROR_WANT_READ && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) return -1;
    if (e == SSL_ERROR_SSL || (e == SSL_ERROR_SYSCALL && errno == 0)) return 0;  // cut without close_notify
    return -1;
  }
  SSL* ssl_ = nullptr;
#else
  ssize_t raw_send(const char* p, std::size_t n) { return ::send(fd_, p, n, MSG_NOSIGNAL); }
  ssize_t raw_recv(char* p, std::size_t n) { return ::recv(fd_, p, n, 0); }
#endif
  bool take(std::size_t n, std::string& out) {
    while (buf_.size() < n)
      if (!fill()) return false;
    out = buf_.substr(0, n);
    buf_.erase(0, n);
    return true;
  }
  bool take_line(std::string& out) {
    std::size_t end;
    while ((end = buf_.find("\r\n")) == std::string::npos)
      if (!fill()) return false;
    out = buf_.substr(0, end);
    buf_.erase(0, end + 2);
    return true;
  }

  int fd_ = -1;
  std::string buf_;
};

/// "GET <path> HTTP/1.1" with a Host field and `extra` fields (each ending in CRLF).
inline std::string get_request(std::string_view path, std::string_view extra = {}) {
  std::string r = "GET ";
  r.append(path).append(" HTTP/1.1\r\nHost: test\r\n").append(extra).append("\r\n");
  return r;
}

}  // namespace ringio_test
