// SPDX-License-Identifier: Apache-2.0
// Fuzzes the permessage-deflate inflate path as a receiving websocket drives it: the
// messages of one connection, each in one or more frames, inflated within a size limit.
//
// Input layout: byte 0 picks the limit (bits 0-2: 2^(6 + 2k) bytes), whether the peer
// takes no context over (bit 3: the inflater restarts each message) and this side's
// (bit 4); the rest is a stream of messages, each a byte of frame count (1-4, low two
// bits + 1), two bytes of length and that many bytes of compressed payload, cut into
// frames at points the payload's first bytes pick.
//
// Checks, for each message:
//  - inflating never produces more than limit + 1 bytes; "ok" means at most limit
//    bytes, "too_big" exactly limit + 1 (it stopped as soon as the limit was passed);
//  - a message inflated whole compresses and inflates back to the same bytes through a
//    second pair of codecs (the sending side's compressor, with the same parameters);
//  - after a failure the connection ends (no more messages are fed).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "websocket/permessage_deflate.hpp"

using namespace ringio::http::detail;

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::size_t limit = std::size_t{1} << (6 + 2 * (data[0] & 7u));
  deflate_agreement agreed{true, (data[0] & 0x10u) != 0, (data[0] & 0x08u) != 0, 15};
  deflate_codec receiver(agreed, 6);
  deflate_agreement mirrored{true, agreed.receive_no_context_takeover, agreed.receive_no_context_takeover, 15};
  deflate_codec echo_sender(mirrored, 6), echo_receiver(mirrored, 6);
  std::size_t at = 1;
  while (at + 3 <= size) {
    const unsigned frames = (data[at] & 3u) + 1;
    std::size_t length = (std::size_t{data[at + 1]} << 8) | data[at + 2];
    at += 3;
    if (length > size - at) length = size - at;
    const std::uint8_t* payload = data + at;
    at += length;
    receiver.begin_message();
    deflate_codec::inflate_status st = deflate_codec::inflate_status::ok;
    std::size_t done = 0;
    for (unsigned f = 0; f < frames && st == deflate_codec::inflate_status::ok; ++f) {
      const bool last = f + 1 == frames;
      const std::size_t piece = last || length == 0 ? length - done : payload[f % length] % (length - done + 1);
      st = receiver.inflate(payload + done, piece, last, limit);
      done += piece;
      check(receiver.inflated().size() <= limit + 1);
    }
    if (st == deflate_codec::inflate_status::too_big) {
      check(receiver.inflated().size() == limit + 1);
      return 0;
    }
    if (st == deflate_codec::inflate_status::bad_data) return 0;
    check(receiver.inflated().size() <= limit);
    const std::string message(receiver.inflated());
    receiver.end_message();
    // The sending side's view: what it compresses comes back whole.
    const std::string wire(echo_sender.compress(message));
    echo_receiver.begin_message();
    check(echo_receiver.inflate(reinterpret_cast<const unsigned char*>(wire.data()), wire.size(), true, limit) ==
          deflate_codec::inflate_status::ok);
    check(echo_receiver.inflated() == message);
    echo_receiver.end_message();
  }
  return 0;
}
