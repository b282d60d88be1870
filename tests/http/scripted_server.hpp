// SPDX-License-Identifier: Apache-2.0
// scripted_server — a raw HTTP server on the test's loop for client tests: each
// accepted connection (plain TCP, or TLS over tls::stream) plays its own script of
// steps (read a request, send bytes, stall, send close_notify, close, reset). Every
// step obeys the stop token, so a test ends it with request_stop() once the client is
// done, whatever the script still had to do.
#pragma once

#include <strings.h>
#include <sys/socket.h>

#include <array>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "ringio/http/client.hpp"
#include "ringio/net/stream_listener.hpp"
#include "ringio/scope.hpp"
#include "ringio/time/sleep.hpp"
#include "ringio/tls/context.hpp"
#include "ringio/tls/stream.hpp"
#include "support/backend_test.hpp"
#include "support/loopback.hpp"
#include "tls/test_certs.hpp"

namespace ringio_test {

struct step {
  enum kind {
    request,       // read a request head and its Content-Length body
    head,          // read a request head only
    send,          // send `bytes`
    flood,         // send `bytes` again and again until sending fails
    stall,         // wait `ms`
    close_notify,  // TLS: send close_notify
    reset,         // close with SO_LINGER 0 (an RST)
    mark,          // count in server_log::marks that the script got here
  };
  kind what;
  std::string bytes;
  int ms = 0;
};

inline step read_request() { return {step::request, {}}; }
inline step read_head() { return {step::head, {}}; }
inline step send(std::string bytes) { return {step::send, std::move(bytes)}; }
inline step flood(std::string bytes) { return {step::flood, std::move(bytes)}; }
inline step stall(int ms) { return {step::stall, {}, ms}; }
inline step close_notify() { return {step::close_notify, {}}; }
inline step reset() { return {step::reset, {}}; }
inline step mark() { return {step::mark, {}}; }

// What the server saw: the request heads (all connections, in arrival order) and how
// many connections it has accepted and closed.
struct server_log {
  std::vector<std::string> heads;
  int accepted = 0;
  int closed = 0;
  int marks = 0;
};

namespace detail {

struct scripted_conn {
  ringio::stream_socket plain;
  std::optional<ringio::tls::stream> secure;
  std::string in;

  ringio::task<ringio::result<std::size_t>> recv(ringio::mutable_buffer b) {
    if (secure) {
      auto n = co_await secure->recv(b);
      co_return n;
    }
    auto n = co_await plain.recv(b);
    co_return n;
  }
  ringio::task<bool> send(const std::string& s) {
    if (secure) {
      auto n = co_await secure->send_all(ringio::const_buffer(s.data(), s.size()));
      co_return n&&* n == s.size();
    }
    auto n = co_await plain.send_all(ringio::const_buffer(s.data(), s.size()));
    co_return n&&* n == s.size();
  }
  // Reads until `in` holds `count` bytes; false when the peer ended first.
  ringio::task<bool> fill(std::size_t count) {
    std::array<char, 16384> buf;
    while (in.size() < count) {
      auto n = co_await recv(ringio::mutable_buffer(buf.data(), buf.size()));
      if (!n || *n == 0) co_return false;
      in.append(buf.data(), *n);
    }
    co_return true;
  }
  int fd() const noexcept { return secure ? secure->native_handle() : plain.native_handle(); }
};

inline std::size_t content_length_of(const std::string& head) {
  std::size_t at = 0;
  while ((at = head.find('\n', at)) != std::string::npos) {
    ++at;
    if (head.size() - at > 15 && ::strncasecmp(head.c_str() + at, "content-length:", 15) == 0)
      return std::stoul(head.substr(at + 15));
  }
  return 0;
}

inline ringio::task<> play(scripted_conn c, std::vector<step> script, server_log& log) {
  for (const step& s : script) {
    bool go_on = true;
    switch (s.what) {
      case step::request:
      case step::head: {
        std::array<char, 16384> buf;
        std::size_t end;
        while ((end = c.in.find("\r\n\r\n")) == std::string::npos) {
          auto n = co_await c.recv(ringio::mutable_buffer(buf.data(), buf.size()));
          if (!n || *n == 0) {
            go_on = false;
            break;
          }
          c.in.append(buf.data(), *n);
        }
        if (!go_on) break;
        std::string h = c.in.substr(0, end + 4);
        c.in.erase(0, end + 4);
        log.heads.push_back(h);
        if (s.what == step::request) {
          const std::size_t body = content_length_of(h);
          go_on = co_await c.fill(body);
          if (go_on) c.in.erase(0, body);
        }
        break;
      }
      case step::send:
        go_on = co_await c.send(s.bytes);
        break;
      case step::flood:
        while (co_await c.send(s.bytes)) {
        }
        go_on = false;
        break;
      case step::stall:
        go_on = static_cast<bool>(co_await ringio::sleep_for(std::chrono::milliseconds(s.ms)));
        break;
      case step::close_notify:
        go_on = c.secure && static_cast<bool>(co_await c.secure->send_close_notify(std::chrono::seconds(1)));
        break;
      case step::mark:
        ++log.marks;
        break;
      case step::reset: {
        linger l{1, 0};
        ::setsockopt(c.fd(), SOL_SOCKET, SO_LINGER, &l, sizeof l);
        go_on = false;
        break;
      }
    }
    if (!go_on) break;
  }
  ++log.closed;  // the connection closes as `c` goes (no close_notify unless scripted)
}

}  // namespace detail

// Accepts one connection per script (a TLS handshake first when `tls` is given) and
// plays each script on its own connection, concurrently.
inline ringio::task<> serve_scripts(ringio::stream_listener& l, std::vector<std::vector<step>> scripts, server_log& log,
                                    const ringio::tls::context* tls = nullptr) {
  ringio::scope connections;
  for (auto& script : scripts) {
    auto sock = co_await l.accept();
    if (!sock) break;
    ++log.accepted;
    detail::scripted_conn c;
    if (tls != nullptr) {
      auto s = ringio::tls::stream::server(*tls, std::move(*sock));
      if (!s) break;
      auto shaken = co_await s->handshake(std::chrono::seconds(2));
      if (!shaken) {
        ++log.closed;
        continue;
      }
      c.secure.emplace(std::move(*s));
    } else {
      c.plain = std::move(*sock);
    }
    connections.spawn(detail::play(std::move(c), std::move(script), log));
  }
  co_await connections.join();
}

// Waits (bounded by 2 s) until the server has closed `n` connections.
inline ringio::task<bool> closed_at_least(const server_log& log, int n) {
  for (int i = 0; i < 400 && log.closed < n; ++i)
    if (!co_await ringio::sleep_for(std::chrono::milliseconds(5))) break;
  co_return log.closed >= n;
}

// Waits (bounded by 2 s) until the scripts have passed `n` mark() steps.
inline ringio::task<bool> marked_at_least(const server_log& log, int n) {
  for (int i = 0; i < 400 && log.marks < n; ++i)
    if (!co_await ringio::sleep_for(std::chrono::milliseconds(5))) break;
  co_return log.marks >= n;
}

// Runs `client_side` while the scripted server serves, then stops the server.
template <class T>
ringio::task<T> against(ringio::stream_listener& l, std::vector<std::vector<step>> scripts, server_log& log,
                        const ringio::tls::context* tls, ringio::task<T> client_side) {
  ringio::scope server;
  server.spawn(serve_scripts(l, std::move(scripts), log, tls));
  T out = co_await std::move(client_side);
  server.request_stop();
  co_await server.join();
  co_return out;
}

// One request: `m` to `url` with `body` (sent with Content-Length) and `fields`.
inline ringio::task<ringio::result<ringio::http::client_response>> fetch(
    ringio::http::client& c, std::string url, ringio::http::method m = ringio::http::method::get, std::string body = {},
    std::vector<std::pair<std::string, std::string>> fields = {}) {
  std::vector<ringio::http::header> views;
  for (const auto& [n, v] : fields) views.push_back({n, v});
  ringio::http::request_spec spec;
  spec.method = m;
  spec.url = url;
  spec.body = body;
  spec.headers = views;
  auto r = co_await c.request(spec);
  co_return r;
}

// The server side of the test PKI (empty when the certificates could not be made).
inline std::optional<ringio::tls::context> test_server_tls() {
  const auto& certs = test_certs::get();
  if (!certs.ok) return std::nullopt;
  auto ctx =
      ringio::tls::context::server({.certificate_chain_file = certs.server_cert, .private_key_file = certs.server_key});
  if (!ctx) return std::nullopt;
  return std::move(*ctx);
}

// Client options that trust the test PKI's CA.
inline ringio::http::client_options trusting_test_ca(ringio::http::client_options o = {}) {
  o.tls.use_system_trust_store = false;
  o.tls.ca_file = test_certs::get().ca;
  return o;
}

inline std::string url_of(const ringio::stream_listener& l, bool tls, std::string_view path = "/") {
  return std::string(tls ? "https://localhost:" : "http://127.0.0.1:") + std::to_string(address_of(l).port()) +
         std::string(path);
}

}  // namespace ringio_test
