// SPDX-License-Identifier: Apache-2.0
// Fuzzes the WebSocket frame codec and the UTF-8 validator as a receiving websocket
// uses them.
//
// Input layout: byte 0 picks the side (bit 0: server, which expects masked frames), the
// frame limit (bits 1-3: 2^(4 + 2k) bytes) and whether permessage-deflate was agreed
// (bit 4: RSV1 allowed on the first frame of a data message); the rest is a stream of
// frames.
//
// Checks, for each frame parsed from the stream in turn:
//  - a header is parsed the same whether the bytes come whole or with the header alone;
//    any shorter prefix is incomplete or, once the error shows in it, the same error;
//  - header_size is 2, 4 or 10, plus 4 with a mask, and never past the bytes given;
//    control frames are final and at most 125 bytes; the payload is within the limit;
//    RSV1 only where allowed, and never on a continuation or control frame;
//  - encoding the parsed fields and parsing them again gives the same fields;
//  - unmasking in two pieces at any split equals unmasking whole, and masking again
//    restores the bytes;
//  - the UTF-8 validator says the same of the payload whole and fed in two pieces.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "websocket/frame_header.hpp"
#include "websocket/utf8_validator.hpp"

using namespace ringio::http::detail;

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

bool same(const frame_header& a, const frame_header& b) {
  return a.opcode == b.opcode && a.fin == b.fin && a.rsv1 == b.rsv1 && a.masked == b.masked &&
         a.payload_length == b.payload_length && a.header_size == b.header_size &&
         (!a.masked || std::memcmp(a.mask, b.mask, 4) == 0);
}

void check_payload(const unsigned char* data, std::size_t size, const frame_header& h) {
  std::vector<unsigned char> whole(data, data + size);
  if (h.masked) apply_mask(whole.data(), whole.size(), h.mask);
  const std::size_t split = size == 0 ? 0 : data[0] % (size + 1);
  std::vector<unsigned char> pieces(data, data + size);
  if (h.masked) {
    apply_mask(pieces.data(), split, h.mask);
    apply_mask(pieces.data() + split, size - split, h.mask, split);
  }
  check(whole == pieces);
  if (h.masked) {
    apply_mask(pieces.data(), pieces.size(), h.mask);
    check(size == 0 || std::memcmp(pieces.data(), data, size) == 0);
  }
  utf8_validator a, b;
  const bool whole_ok = a.feed(whole.data(), whole.size()) && a.complete();
  const bool pieces_ok = b.feed(whole.data(), split) && b.feed(whole.data() + split, size - split) && b.complete();
  check(whole_ok == pieces_ok);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const bool server = (data[0] & 1) != 0;
  const std::uint64_t limit = std::uint64_t{1} << (4 + 2 * ((data[0] >> 1) & 7));
  const bool rsv1 = (data[0] & 0x10) != 0;
  const unsigned char* at = data + 1;
  std::size_t left = size - 1;
  while (left > 0) {
    frame_header h;
    const frame_check r = parse_frame_header(at, left, server, limit, h, rsv1);
    for (std::size_t n = 0; n < left && n < max_frame_header; ++n) {
      frame_header p;
      const frame_check pr = parse_frame_header(at, n, server, limit, p, rsv1);
      check(pr == frame_check::incomplete || pr == r);
      if (pr == frame_check::complete) check(same(p, h));
    }
    if (r != frame_check::complete) return 0;
    check(h.header_size <= left && h.header_size <= max_frame_header);
    const std::size_t base = h.header_size - (h.masked ? 4 : 0);
    check(base == 2 || base == 4 || base == 10);
    check(h.masked == server);
    check(h.payload_length <= limit);
    if (is_control(h.opcode)) check(h.fin && h.payload_length <= 125);
    if (h.rsv1) check(rsv1 && !is_control(h.opcode) && h.opcode != ws_opcode::continuation);
    unsigned char again[max_frame_header];
    const std::size_t n =
        encode_frame_header(again, h.opcode, h.fin, h.payload_length, h.masked ? h.mask : nullptr, h.rsv1);
    frame_header g;
    check(parse_frame_header(again, n, server, limit, g, rsv1) == frame_check::complete);
    check(g.opcode == h.opcode && g.fin == h.fin && g.rsv1 == h.rsv1 && g.payload_length == h.payload_length &&
          n <= h.header_size);
    at += h.header_size;
    left -= h.header_size;
    const std::size_t payload = h.payload_length < left ? static_cast<std::size_t>(h.payload_length) : left;
    check_payload(at, payload, h);
    at += payload;
    left -= payload;
  }
  return 0;
}
