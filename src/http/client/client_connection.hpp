// client_connection — one connection of http::client: its socket, the origin it is
// for, and the receive buffer that response heads are parsed in (allocated once per
// connection, reused by every request on it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "ringio/http/response_stream.hpp"
#include "ringio/net/stream_socket.hpp"

namespace ringio::http::detail {

struct client_connection {
  client_connection(bool is_tls, std::string_view h, std::uint16_t p, std::size_t buffer_size)
      : tls(is_tls), host(h), port(p), buffer(new char[buffer_size]), capacity(buffer_size) {}

  bool tls;
  std::string host;
  std::uint16_t port;
  stream_socket socket;
  std::unique_ptr<char[]> buffer;
  std::size_t capacity;
  std::size_t begin = 0;  // unread received bytes are [begin, end)
  std::size_t end = 0;
  std::string out;        // the serialized request head (capacity kept between requests)
  std::int64_t idle_since_ns = 0;
};

}  // namespace ringio::http::detail
