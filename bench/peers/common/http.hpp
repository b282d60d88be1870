// SPDX-License-Identifier: Apache-2.0
// HTTP/1.1 "hello world" used by every peer's http mode: request framing,
// the keep-alive decision and the fixed responses.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace peers::http {

// The response to every request that keeps the connection open.
inline constexpr std::string_view kResponse =
    "HTTP/1.1 200 OK\r\nContent-Length: 12\r\nContent-Type: text/plain\r\n\r\n"
    "Hello world!";

// An incomplete request that grows past this many bytes closes the connection.
inline constexpr std::size_t kMaxRequestBytes = 8192;

struct Answer {
  std::size_t consumed = 0;  // bytes at the front of the input that were answered
  bool close = false;        // close the connection once the output is written
};

// Answers, in order, every complete request (one that ends in "\r\n\r\n") at
// the front of `in` by appending its response to `out`. Stops after a request
// that closes the connection. The bytes after `consumed` are an incomplete
// request; if there are more than kMaxRequestBytes of them, `close` is set.
Answer answer_requests(std::string_view in, std::string& out);

// Keeps the incomplete request of one read until the next read completes it.
class Session {
 public:
  // Answers the requests that `data` completes by appending to `out`; returns
  // true when the connection must close once `out` is written (the bytes
  // after the closing request are dropped).
  bool feed(std::string_view data, std::string& out);

 private:
  std::string pending_;
};

}  // namespace peers::http
