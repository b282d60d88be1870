// SPDX-License-Identifier: Apache-2.0
// frame_header — the RFC 6455 section 5.2 frame header: parsing (with every check a
// receiver makes before it looks at the payload), encoding, and masking. Pure
// functions, no I/O; the websocket stream and the fuzz target use them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ringio::http::detail {

/// The opcodes of RFC 6455 section 5.2.
enum class ws_opcode : std::uint8_t { continuation = 0, text = 1, binary = 2, close = 8, ping = 9, pong = 10 };

/// The most bytes a frame header takes: 2 + 8 (length) + 4 (mask key).
inline constexpr std::size_t max_frame_header = 14;

/// One parsed frame header.
struct frame_header {
  ws_opcode opcode = ws_opcode::continuation;
  bool fin = false;
  bool masked = false;
  bool rsv1 = false;  // "compressed" under permessage-deflate (RFC 7692); else never set
  std::uint8_t mask[4] = {};
  std::uint64_t payload_length = 0;
  std::size_t header_size = 0;  // bytes before the payload
};

/// What parse_frame_header found.
enum class frame_check : std::uint8_t {
  complete,        // the header is whole and valid
  incomplete,      // more bytes are needed
  protocol_error,  // close code 1002: reserved bits or opcode, bad control frame, masking
  too_big,         // close code 1009: the payload is longer than allowed
};

/// Whether the opcode is a control frame's (close, ping, pong).
[[nodiscard]] constexpr bool is_control(ws_opcode op) noexcept { return (static_cast<unsigned>(op) & 8u) != 0; }

/// Parses the header at the start of [data, data + size). `expect_masked`: the server
/// side, where every frame must be masked (the client side rejects masked frames).
/// Payloads over `max_payload` are too_big; control frames must be final and carry at
/// most 125 bytes. `allow_rsv1`: permessage-deflate was agreed, so RSV1 may be set on
/// the first frame of a data message (never on a continuation or control frame); else
/// any reserved bit is a protocol error.
[[nodiscard]] frame_check parse_frame_header(const unsigned char* data, std::size_t size, bool expect_masked,
                                             std::uint64_t max_payload, frame_header& out,
                                             bool allow_rsv1 = false) noexcept;

/// Writes the header of a frame into `out` (max_frame_header bytes) and returns its
/// size; `mask` (4 bytes) or nullptr for an unmasked frame; `rsv1` sets RSV1 (the
/// first frame of a compressed message).
[[nodiscard]] std::size_t encode_frame_header(unsigned char* out, ws_opcode op, bool fin, std::uint64_t payload_length,
                                              const unsigned char* mask, bool rsv1 = false) noexcept;

/// XORs [data, data + size) with `mask`, starting `offset` bytes into the payload (the
/// same call masks and unmasks).
void apply_mask(unsigned char* data, std::size_t size, const unsigned char* mask, std::uint64_t offset = 0) noexcept;

/// Copies [from, from + size) to `to` masked with `mask` (from the payload's start): a
/// client's frame built in one pass. The ranges must not overlap.
void copy_masked(unsigned char* to, const unsigned char* from, std::size_t size, const unsigned char* mask) noexcept;

}  // namespace ringio::http::detail
