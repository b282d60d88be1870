// SPDX-License-Identifier: Apache-2.0
// openssl_peer — the far end of a TLS connection made of OpenSSL alone, independent of
// ringio: a listener on 127.0.0.1 that accepts one connection on a thread of its own,
// runs the server handshake with the test PKI over the plain socket (SSL_set_fd), then
// a script given by the test. Gates let the test (on its loop) tell the script when to
// go on; the destructor unblocks whatever the script waits for and joins the thread.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "ringio/net/socket_address.hpp"
#include "test_certs.hpp"

namespace ringio_test {

class openssl_peer {
 public:
  struct options {
    int tickets = 0;  ///< TLS 1.3 session tickets sent after the handshake
    int max_version = TLS1_3_VERSION;
    int receive_buffer = 0;  ///< SO_RCVBUF of the accepted socket (0: the kernel's)
  };
  using script = std::function<void(openssl_peer&)>;

  openssl_peer(script s) : openssl_peer(options{}, std::move(s)) {}
  openssl_peer(options o, script s) {
    ::signal(SIGPIPE, SIG_IGN);  // OpenSSL writes with write(2): a closed connection is an error, not a signal
    const auto& certs = test_certs::get();
    ctx_ = SSL_CTX_new(TLS_server_method());
    SSL_CTX_set_num_tickets(ctx_, static_cast<std::size_t>(o.tickets));
    SSL_CTX_set_max_proto_version(ctx_, o.max_version);
    bool ok = SSL_CTX_use_certificate_chain_file(ctx_, certs.server_cert.c_str()) == 1 &&
              SSL_CTX_use_PrivateKey_file(ctx_, certs.server_key.c_str(), SSL_FILETYPE_PEM) == 1;
    EXPECT_TRUE(ok) << "openssl_peer: certificate or key refused";
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (o.receive_buffer > 0)  // set before listen: the accepted socket inherits it (and its window)
      ::setsockopt(listen_fd_, SOL_SOCKET, SO_RCVBUF, &o.receive_buffer, sizeof o.receive_buffer);
    EXPECT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(listen_fd_, 1), 0);
    EXPECT_EQ(::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len), 0);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this, s = std::move(s)] {
      fd_ = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd_ < 0 || stopping_) return;
      int on = 1;  // each write goes out at once: a close right after it cannot lose it
      ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
      ssl_ = SSL_new(ctx_);
      SSL_set_fd(ssl_, fd_);
      handshake_ok_ = SSL_accept(ssl_) == 1;
      if (handshake_ok_) s(*this);
      ERR_clear_error();
      finished_ = true;
    });
  }
  ~openssl_peer() { stop(); }
  openssl_peer(const openssl_peer&) = delete;
  openssl_peer& operator=(const openssl_peer&) = delete;

  /// Unblocks the script (its socket is shut down, gates give up) and joins it.
  void stop() {
    if (thread_.joinable()) {
      {
        std::lock_guard lock(m_);
        stopping_ = true;
      }
      cv_.notify_all();
      ::shutdown(listen_fd_, SHUT_RDWR);  // wakes an accept that never got a connection
      if (int fd = fd_.load(); fd >= 0) ::shutdown(fd, SHUT_RDWR);
      thread_.join();
    }
    // Also after join_script(): the connection, its SSL and the context are freed once.
    if (ssl_ != nullptr) SSL_free(ssl_);
    ssl_ = nullptr;
    if (int fd = fd_.exchange(-1); fd >= 0) ::close(fd);
    if (listen_fd_ >= 0) ::close(listen_fd_);
    listen_fd_ = -1;
    if (ctx_ != nullptr) SSL_CTX_free(ctx_);
    ctx_ = nullptr;
  }

  [[nodiscard]] ringio::socket_address address() const { return ringio::socket_address::loopback(port_); }
  /// Waits (test side, blocking the thread: call it outside the loop, or after the
  /// script is known to have ended) until the script returns.
  void join_script() {
    if (thread_.joinable()) thread_.join();
  }
  [[nodiscard]] bool finished() const noexcept { return finished_; }
  [[nodiscard]] bool handshake_ok() const noexcept { return handshake_ok_; }

  // ---- gates: the test opens, the script waits ----
  void open(int gate) {
    {
      std::lock_guard lock(m_);
      open_.push_back(gate);
    }
    cv_.notify_all();
  }
  /// Script side: waits until `gate` is open (false when the peer is stopping or the
  /// limit passes).
  bool wait(int gate, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
    std::unique_lock lock(m_);
    return cv_.wait_for(lock, limit, [&] {
      if (stopping_) return true;
      for (int g : open_)
        if (g == gate) return true;
      return false;
    }) && !stopping_;
  }
  /// Script side: whether `gate` is open now (or the peer is stopping).
  [[nodiscard]] bool is_open(int gate) {
    std::lock_guard lock(m_);
    if (stopping_) return true;
    for (int g : open_)
      if (g == gate) return true;
    return false;
  }
  [[nodiscard]] bool stopping() const noexcept { return stopping_; }
  /// Script side: tells the test that `mark` was reached.
  void reached(int mark) { marks_.fetch_or(1u << mark); }
  [[nodiscard]] bool has_reached(int mark) const noexcept { return (marks_.load() & (1u << mark)) != 0; }

  // ---- for the script (blocking socket) ----
  SSL* ssl() noexcept { return ssl_; }
  int fd() noexcept { return fd_; }
  bool write(std::string_view text) { return write(text.data(), text.size()); }
  bool write(const void* p, std::size_t n) {
    const char* c = static_cast<const char*>(p);
    while (n > 0) {
      int w = SSL_write(ssl_, c, static_cast<int>(std::min<std::size_t>(n, 1 << 20)));
      if (w <= 0) return false;
      c += w;
      n -= static_cast<std::size_t>(w);
    }
    return true;
  }
  /// Reads exactly n bytes (fewer when the stream ends or fails first) into `into`.
  std::size_t read_exact(std::size_t n, std::vector<std::byte>& into) {
    std::size_t start = into.size();
    into.resize(start + n);
    std::size_t got = 0;
    while (got < n) {
      int r = SSL_read(ssl_, into.data() + start + got, static_cast<int>(std::min<std::size_t>(n - got, 1 << 20)));
      if (r <= 0) break;
      got += static_cast<std::size_t>(r);
    }
    into.resize(start + got);
    return got;
  }
  /// Sends close_notify (not waiting for the answer).
  void close_notify() { (void)SSL_shutdown(ssl_); }
  /// A reset: SO_LINGER 0, then the socket is shut down both ways (the descriptor
  /// itself is closed by stop()).
  void reset() {
    linger l{1, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    ::close(fd_.exchange(-1));
  }
  /// Closes the descriptor (with unread data in it, the kernel answers with a reset).
  void close_socket() { ::close(fd_.exchange(-1)); }

 private:
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  int listen_fd_ = -1;
  std::atomic<int> fd_{-1};
  std::uint16_t port_ = 0;
  std::mutex m_;
  std::condition_variable cv_;
  std::vector<int> open_;
  std::atomic<bool> stopping_{false};
  std::atomic<unsigned> marks_{0};
  std::atomic<bool> handshake_ok_{false}, finished_{false};
  std::thread thread_;
};

}  // namespace ringio_test
