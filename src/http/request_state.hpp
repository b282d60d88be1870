// SPDX-License-Identifier: Apache-2.0
// request_state — what a connection needs only while a request is in progress: the
// receive and send buffers, the parsed request, the parsers. Idle keep-alive
// connections hold none; they borrow one from their loop's cache (loop_resources)
// when bytes arrive and give it back once everything received is answered.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "output_buffer.hpp"
#include "ringio/http/chunked_decoder.hpp"
#include "ringio/http/request.hpp"
#include "ringio/http/request_parser.hpp"

namespace ringio::http::detail {

struct request_state {
  static constexpr std::size_t initial_input = 4096;
  // Buffers that grew beyond these (a large body, many pipelined responses) are freed
  // rather than cached, so the cache stays small.
  static constexpr std::size_t kept_input = 16 * 1024;
  static constexpr std::size_t kept_output = 16 * 1024;
  static constexpr std::size_t kept_params = 4 * 1024;  // decoded path parameters

  std::unique_ptr<char[]> in;  // allocated on first use
  std::size_t cap = 0;
  std::size_t start = 0, end = 0;  // unparsed bytes: [start, end)
  output_buffer out;
  request req;
  request_parser parser;
  chunked_decoder chunks;
  request_state* next_free = nullptr;  // the cache's list

  /// Ready for a connection's first bytes.
  void prepare(std::size_t max_head_bytes) {
    if (!in) {
      in = std::make_unique_for_overwrite<char[]>(initial_input);
      cap = initial_input;
    }
    start = end = 0;
    req.clear();
    parser = request_parser(max_head_bytes);
  }
  /// Back to the cache: drop what grew large.
  void recycle() noexcept {
    if (cap > kept_input) {
      in.reset();
      cap = 0;
    }
    if (out.capacity() > kept_output) out = output_buffer();
    if (req.param_text_.capacity() > kept_params) {
      req.param_count_ = 0;  // no view may outlive the text
      req.param_text_ = std::string();
    }
    out.clear();
  }
};

}  // namespace ringio::http::detail
