// SPDX-License-Identifier: Apache-2.0
#include "frame_header.hpp"

#include <cstring>

namespace ringio::http::detail {

namespace {

bool known_opcode(unsigned op) noexcept { return op <= 2 || (op >= 8 && op <= 10); }

}  // namespace

frame_check parse_frame_header(const unsigned char* data, std::size_t size, bool expect_masked,
                               std::uint64_t max_payload, frame_header& out, bool allow_rsv1) noexcept {
  if (size < 2) return frame_check::incomplete;
  const unsigned b0 = data[0], b1 = data[1];
  if ((b0 & 0x30u) != 0) return frame_check::protocol_error;  // RSV2-3: no extension uses them
  const unsigned op = b0 & 0x0fu;
  if (!known_opcode(op)) return frame_check::protocol_error;
  out.opcode = static_cast<ws_opcode>(op);
  out.rsv1 = (b0 & 0x40u) != 0;
  // RFC 7692 section 6: RSV1 marks the first frame of a compressed data message only.
  if (out.rsv1 && (!allow_rsv1 || out.opcode == ws_opcode::continuation || is_control(out.opcode)))
    return frame_check::protocol_error;
  out.fin = (b0 & 0x80u) != 0;
  out.masked = (b1 & 0x80u) != 0;
  if (out.masked != expect_masked) return frame_check::protocol_error;
  std::uint64_t length = b1 & 0x7fu;
  std::size_t at = 2;
  if (length == 126) {
    if (size < 4) return frame_check::incomplete;
    length = (std::uint64_t{data[2]} << 8) | data[3];
    at = 4;
  } else if (length == 127) {
    if (size < 10) return frame_check::incomplete;
    length = 0;
    for (std::size_t i = 2; i < 10; ++i) length = (length << 8) | data[i];
    if ((length >> 63) != 0) return frame_check::protocol_error;  // the most significant bit must be 0
    at = 10;
  }
  if (is_control(out.opcode) && (!out.fin || length > 125)) return frame_check::protocol_error;
  if (length > max_payload) return frame_check::too_big;
  if (out.masked) {
    if (size < at + 4) return frame_check::incomplete;
    std::memcpy(out.mask, data + at, 4);
    at += 4;
  }
  out.payload_length = length;
  out.header_size = at;
  return frame_check::complete;
}

std::size_t encode_frame_header(unsigned char* out, ws_opcode op, bool fin, std::uint64_t payload_length,
                                const unsigned char* mask, bool rsv1) noexcept {
  out[0] = static_cast<unsigned char>((fin ? 0x80u : 0u) | (rsv1 ? 0x40u : 0u) | static_cast<unsigned>(op));
  const unsigned char mask_bit = mask != nullptr ? 0x80 : 0;
  std::size_t at = 2;
  if (payload_length < 126) {
    out[1] = static_cast<unsigned char>(mask_bit | payload_length);
  } else if (payload_length <= 0xffff) {
    out[1] = static_cast<unsigned char>(mask_bit | 126u);
    out[2] = static_cast<unsigned char>(payload_length >> 8);
    out[3] = static_cast<unsigned char>(payload_length);
    at = 4;
  } else {
    out[1] = static_cast<unsigned char>(mask_bit | 127u);
    for (int i = 0; i < 8; ++i) out[2 + i] = static_cast<unsigned char>(payload_length >> (56 - 8 * i));
    at = 10;
  }
  if (mask != nullptr) {
    std::memcpy(out + at, mask, 4);
    at += 4;
  }
  return at;
}

namespace {

// The mask key repeated to eight bytes, starting `offset` bytes into the payload.
std::uint64_t word_key(const unsigned char* mask, std::uint64_t offset) noexcept {
  unsigned char key[8];
  for (std::size_t i = 0; i < 8; ++i) key[i] = mask[(offset + i) % 4];
  std::uint64_t word;
  std::memcpy(&word, key, 8);
  return word;
}

// XORs `size` bytes of `from` with the key into `to` (which may be `from`): 32 bytes a
// step in four words the compiler turns into vector instructions, then one word a step.
void xor_key(unsigned char* to, const unsigned char* from, std::size_t size, std::uint64_t key) noexcept {
  std::size_t i = 0;
  for (; i + 32 <= size; i += 32) {
    std::uint64_t words[4];
    std::memcpy(words, from + i, 32);
    for (std::uint64_t& w : words) w ^= key;
    std::memcpy(to + i, words, 32);
  }
  for (; i + 8 <= size; i += 8) {
    std::uint64_t word;
    std::memcpy(&word, from + i, 8);
    word ^= key;
    std::memcpy(to + i, &word, 8);
  }
  unsigned char tail[8];
  std::memcpy(tail, &key, 8);
  for (std::size_t k = 0; i < size; ++i, ++k) to[i] = static_cast<unsigned char>(from[i] ^ tail[k]);
}

}  // namespace

void apply_mask(unsigned char* data, std::size_t size, const unsigned char* mask, std::uint64_t offset) noexcept {
  xor_key(data, data, size, word_key(mask, offset));
}

void copy_masked(unsigned char* to, const unsigned char* from, std::size_t size, const unsigned char* mask) noexcept {
  xor_key(to, from, size, word_key(mask, 0));
}

}  // namespace ringio::http::detail
