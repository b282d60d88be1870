// SPDX-License-Identifier: Apache-2.0
// permessage_deflate — RFC 7692: the negotiation of the extension (the client's offer,
// the server's choice among offers, the client's check of the answer) and the codec, a
// pair of zlib streams made once per websocket that compress messages sent and inflate
// messages received within a size limit.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "ringio/http/header_list.hpp"
#include "ringio/http/websocket_deflate_options.hpp"

namespace ringio::http::detail {

/// What both sides agreed, seen from one side.
struct deflate_agreement {
  bool enabled = false;
  bool send_no_context_takeover = false;     // this side's compressor restarts each message
  bool receive_no_context_takeover = false;  // the peer's does: our inflater restarts too
  int send_window_bits = 15;                 // 8: this side sends uncompressed
};

/// The Sec-WebSocket-Extensions value a client with `o` offers.
[[nodiscard]] std::string deflate_offer(const websocket_deflate_options& o);

/// Server side: picks the first valid permessage-deflate offer among the
/// Sec-WebSocket-Extensions fields of a request (offers with unknown, repeated or
/// invalid parameters are declined). True when one was accepted: `response` is the
/// value to answer with, `agreed` what holds.
[[nodiscard]] bool accept_deflate_offer(const header_list& request_headers, const websocket_deflate_options& o,
                                        std::string& response, deflate_agreement& agreed);

/// Client side: checks the Sec-WebSocket-Extensions value `answer` (all fields joined
/// with commas; empty: none) against the offer made with `o`. False when the answer
/// must fail the handshake (another extension, one not offered, bad parameters).
[[nodiscard]] bool check_deflate_answer(std::string_view answer, const websocket_deflate_options& o, bool offered,
                                        deflate_agreement& agreed);

/// The compressor and inflater of one websocket (zlib streams made once).
class deflate_codec {
 public:
  /// What inflate() found.
  enum class inflate_status { ok, too_big, bad_data };

  deflate_codec(const deflate_agreement& agreed, int level);
  ~deflate_codec();
  deflate_codec(const deflate_codec&) = delete;
  deflate_codec& operator=(const deflate_codec&) = delete;

  /// Whether messages are sent compressed at all (a level and a window zlib can use).
  [[nodiscard]] bool can_compress() const noexcept { return compress_ok_; }
  /// Compresses one whole message; the result (the tail 00 00 ff ff removed) stays
  /// valid until the next call. Empty view: zlib failed.
  [[nodiscard]] std::string_view compress(std::string_view message);

  /// Starts inflating a new message into `out` from its start.
  void begin_message() noexcept { size_ = 0; }
  /// Inflates one frame's payload (`last`: the message's final frame, after which the
  /// tail 00 00 ff ff is fed) into the buffer, stopping as soon as the output passes
  /// `limit` bytes (too_big). The buffer grows as needed, up to limit + 1 bytes, and is
  /// kept between messages.
  [[nodiscard]] inflate_status inflate(const unsigned char* data, std::size_t size, bool last, std::size_t limit);
  /// The message inflated so far.
  [[nodiscard]] std::string_view inflated() const noexcept { return {out_.data(), size_}; }
  /// Ends a message: the inflater forgets it when the peer does not take its context over.
  void end_message() noexcept;

 private:
  inflate_status inflate_bytes(const unsigned char* data, std::size_t size, std::size_t limit);

  struct streams;
  std::unique_ptr<streams> z_;
  bool compress_ok_ = false;
  bool send_reset_ = false;
  bool receive_reset_ = false;
  std::string out_;  // inflated bytes [0, size_); its size is its capacity in use
  std::size_t size_ = 0;
  std::string deflated_;  // compressed bytes of the last message sent
};

}  // namespace ringio::http::detail
