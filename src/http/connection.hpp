// connection — one client connection: read, parse, call the handler, write; again
// while keep-alive allows. Buffers are per connection and reused by every request.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stop_token>
#include <string_view>

#include "output_buffer.hpp"
#include "ringio/http/chunked_decoder.hpp"
#include "ringio/http/request.hpp"
#include "ringio/http/request_parser.hpp"
#include "ringio/http/response.hpp"
#include "ringio/net/stream_socket.hpp"
#include "ringio/task.hpp"
#include "server_core.hpp"

namespace ringio::http::detail {

/// Stops `target` when the stop token it is registered on is stopped.
struct forward_stop {
  std::stop_source* target;
  void operator()() const noexcept { target->request_stop(); }
};

class connection {
 public:
  connection(server_core& core, stream_socket s);
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  /// Serves requests until the connection ends.
  task<void> run();
  /// Enforces the idle and send timeouts of run() (run it beside it; stop it after).
  task<void> watchdog();
  /// Answers 503 (connection limit) and closes.
  task<void> refuse();

 private:
  static constexpr std::size_t initial_input = 4096;
  static constexpr std::size_t min_receive = 1024;
  static constexpr std::size_t flush_threshold = 64 * 1024;  // gathered pipelined responses
  static constexpr std::size_t inline_body = 64 * 1024;      // larger fixed bodies go out directly
  static constexpr std::size_t file_chunk = 64 * 1024;
  static constexpr auto linger_time = std::chrono::seconds(2);
  static constexpr std::size_t linger_bytes = 1 << 20;

  enum class framing : std::uint8_t { length, chunked, until_close, none };
  // What run() waits for; every change counts as progress for the watchdog.
  enum class phase : std::uint8_t { busy, idle, sending };
  void enter(phase p) noexcept {
    phase_ = p;
    ++progress_;
  }

  [[nodiscard]] std::string_view pending() const noexcept { return {in_.get() + start_, end_ - start_}; }
  [[nodiscard]] mutable_buffer free_space() const noexcept { return {in_.get() + end_, cap_ - end_}; }
  bool make_room(std::size_t min_free);
  void consume(std::size_t n) noexcept;

  task<int> read_body(std::size_t head_size, std::size_t& request_size);
  void write_head(const response& r, framing f, std::uint64_t length, bool keep);
  bool write_fixed(const response& r, bool keep);
  task<bool> write_special(response& r, bool& keep);
  task<bool> send_file(file_body& f);
  task<bool> send_out();
  task<void> fail(int status);
  task<void> close_gracefully(bool linger);
  void log_handler_error(std::string_view what);

  server_core& core_;
  stream_socket sock_;
  std::unique_ptr<char[]> in_;
  std::size_t cap_;
  std::size_t limit_;  // the receive buffer never grows beyond this
  std::size_t start_ = 0, end_ = 0;
  output_buffer out_;
  request req_;
  request_parser parser_;
  chunked_decoder chunks_;
  std::stop_source idle_;  // stops waits for a next request: drain, idle timeout, our own stop
  std::stop_source kill_;  // stops sends: send timeout, our own stop
  std::uint32_t progress_ = 0;
  phase phase_ = phase::busy;
};

}  // namespace ringio::http::detail
