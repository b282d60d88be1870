// SPDX-License-Identifier: Apache-2.0
// The WebSocket frame codec and UTF-8 validator on their own: header forms, the checks
// a receiver makes (reserved bits, opcodes, control frames, masking, limits), masking
// round trips and the handshake's accept value (RFC 6455's own example).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "websocket/frame_header.hpp"
#include "websocket/handshake.hpp"
#include "websocket/utf8_validator.hpp"

using namespace ringio::http::detail;

namespace {

std::vector<unsigned char> bytes(std::initializer_list<int> b) {
  std::vector<unsigned char> v;
  for (int x : b) v.push_back(static_cast<unsigned char>(x));
  return v;
}

frame_check parse(const std::vector<unsigned char>& v, bool masked, frame_header& h, std::uint64_t max = 1 << 20) {
  return parse_frame_header(v.data(), v.size(), masked, max, h);
}

}  // namespace

TEST(WebSocketFrame, ParsesTheRfcExamples) {
  frame_header h;
  // A single-frame unmasked text message "Hello" (RFC 6455 section 5.7).
  auto hello = bytes({0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f});
  ASSERT_EQ(parse(hello, false, h), frame_check::complete);
  EXPECT_TRUE(h.fin);
  EXPECT_EQ(h.opcode, ws_opcode::text);
  EXPECT_EQ(h.payload_length, 5u);
  EXPECT_EQ(h.header_size, 2u);
  // The same, masked.
  auto masked = bytes({0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58});
  ASSERT_EQ(parse(masked, true, h), frame_check::complete);
  EXPECT_EQ(h.header_size, 6u);
  apply_mask(masked.data() + 6, 5, h.mask);
  EXPECT_EQ(std::string(masked.begin() + 6, masked.end()), "Hello");
  // A fragmented message's first frame, and a 256-byte binary frame (16-bit length).
  ASSERT_EQ(parse(bytes({0x01, 0x03, 0x48, 0x65, 0x6c}), false, h), frame_check::complete);
  EXPECT_FALSE(h.fin);
  ASSERT_EQ(parse(bytes({0x82, 0x7e, 0x01, 0x00}), false, h), frame_check::complete);
  EXPECT_EQ(h.payload_length, 256u);
  EXPECT_EQ(h.header_size, 4u);
  // 64 KiB (64-bit length).
  ASSERT_EQ(parse(bytes({0x82, 0x7f, 0, 0, 0, 0, 0, 1, 0, 0}), false, h), frame_check::complete);
  EXPECT_EQ(h.payload_length, 65536u);
  EXPECT_EQ(h.header_size, 10u);
}

TEST(WebSocketFrame, AsksForMoreUntilTheHeaderIsWhole) {
  frame_header h;
  const auto full = bytes({0x82, 0xff, 0, 0, 0, 0, 0, 1, 0, 0, 1, 2, 3, 4});
  for (std::size_t n = 0; n < full.size(); ++n) {
    EXPECT_EQ(parse_frame_header(full.data(), n, true, 1 << 20, h), frame_check::incomplete) << n;
  }
  EXPECT_EQ(parse_frame_header(full.data(), full.size(), true, 1 << 20, h), frame_check::complete);
  EXPECT_EQ(h.header_size, 14u);
}

TEST(WebSocketFrame, RejectsWhatRfc6455Forbids) {
  frame_header h;
  EXPECT_EQ(parse(bytes({0xc1, 0x80, 0, 0, 0, 0}), true, h), frame_check::protocol_error);   // RSV1
  EXPECT_EQ(parse(bytes({0x83, 0x80, 0, 0, 0, 0}), true, h), frame_check::protocol_error);   // opcode 3
  EXPECT_EQ(parse(bytes({0x8b, 0x80, 0, 0, 0, 0}), true, h), frame_check::protocol_error);   // opcode 11
  EXPECT_EQ(parse(bytes({0x81, 0x00}), true, h), frame_check::protocol_error);               // unmasked to a server
  EXPECT_EQ(parse(bytes({0x81, 0x80, 0, 0, 0, 0}), false, h), frame_check::protocol_error);  // masked to a client
  EXPECT_EQ(parse(bytes({0x09, 0x80, 0, 0, 0, 0}), true, h), frame_check::protocol_error);   // fragmented ping
  EXPECT_EQ(parse(bytes({0x89, 0xfe, 0, 126, 0, 0, 0, 0}), true, h), frame_check::protocol_error);  // ping > 125
  EXPECT_EQ(parse(bytes({0x82, 0x7f, 0x80, 0, 0, 0, 0, 0, 0, 0}), false, h), frame_check::protocol_error);  // 2^63
  EXPECT_EQ(parse(bytes({0x82, 0x7e, 0x04, 0x01}), false, h, 1024), frame_check::too_big);
  EXPECT_EQ(parse(bytes({0x82, 0x7e, 0x04, 0x00}), false, h, 1024), frame_check::complete);
}

TEST(WebSocketFrame, EncodesWhatItParses) {
  for (std::uint64_t length : {0ull, 1ull, 125ull, 126ull, 65535ull, 65536ull, 1ull << 40}) {
    for (bool masked : {false, true}) {
      unsigned char out[max_frame_header];
      const unsigned char key[4] = {1, 2, 3, 4};
      const std::size_t n = encode_frame_header(out, ws_opcode::binary, true, length, masked ? key : nullptr);
      frame_header h;
      ASSERT_EQ(parse_frame_header(out, n, masked, ~0ull >> 1, h), frame_check::complete);
      EXPECT_EQ(h.header_size, n);
      EXPECT_EQ(h.payload_length, length);
      EXPECT_EQ(h.opcode, ws_opcode::binary);
      if (masked) {
        EXPECT_EQ(std::string(h.mask, h.mask + 4), std::string(key, key + 4));
      }
    }
  }
}

TEST(WebSocketFrame, MaskingAtAnyOffsetIsItsOwnInverse) {
  std::string text(1000, '\0');
  for (std::size_t i = 0; i < text.size(); ++i) text[i] = static_cast<char>(i * 7);
  const unsigned char key[4] = {0xde, 0xad, 0xbe, 0xef};
  std::string masked = text;
  apply_mask(reinterpret_cast<unsigned char*>(masked.data()), masked.size(), key);
  for (std::size_t i = 0; i < text.size(); ++i) ASSERT_EQ(masked[i], static_cast<char>(text[i] ^ key[i % 4])) << i;
  // Unmasked in two pieces, the second starting at an odd offset.
  apply_mask(reinterpret_cast<unsigned char*>(masked.data()), 333, key);
  apply_mask(reinterpret_cast<unsigned char*>(masked.data()) + 333, masked.size() - 333, key, 333);
  EXPECT_EQ(masked, text);
}

// Every length around the 32- and 8-byte steps, at every offset into the key and every
// alignment of the data, masks byte by byte as RFC 6455 section 5.3 says.
TEST(WebSocketFrame, MaskingMatchesTheBytewiseDefinitionAtEveryLengthAndAlignment) {
  const unsigned char key[4] = {0x12, 0x9a, 0x5c, 0xe7};
  std::vector<unsigned char> text(160 + 8);
  for (std::size_t i = 0; i < text.size(); ++i) text[i] = static_cast<unsigned char>(i * 31 + 5);
  for (std::size_t shift = 0; shift < 8; ++shift) {
    for (std::size_t size = 0; size <= 160; ++size) {
      for (std::uint64_t offset = 0; offset < 4; ++offset) {
        std::vector<unsigned char> data = text;
        apply_mask(data.data() + shift, size, key, offset);
        for (std::size_t i = 0; i < text.size(); ++i) {
          const bool inside = i >= shift && i < shift + size;
          const unsigned char want = inside ? text[i] ^ key[(i - shift + offset) % 4] : text[i];
          ASSERT_EQ(data[i], want) << "shift " << shift << " size " << size << " offset " << offset << " at " << i;
        }
      }
      std::vector<unsigned char> copy(text.size(), 0xaa);
      copy_masked(copy.data() + shift, text.data(), size, key);
      for (std::size_t i = 0; i < copy.size(); ++i) {
        const bool inside = i >= shift && i < shift + size;
        const unsigned char want = inside ? text[i - shift] ^ key[(i - shift) % 4] : 0xaa;
        ASSERT_EQ(copy[i], want) << "copy: shift " << shift << " size " << size << " at " << i;
      }
    }
  }
}

TEST(WebSocketUtf8, AcceptsValidTextAndRejectsTheRest) {
  EXPECT_TRUE(is_valid_utf8(""));
  EXPECT_TRUE(is_valid_utf8("plain ascii, long enough for the eight-byte path"));
  EXPECT_TRUE(is_valid_utf8("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80"));
  EXPECT_TRUE(is_valid_utf8("\xf4\x8f\xbf\xbf"));  // U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\xff"));
  EXPECT_FALSE(is_valid_utf8("\x80"));              // stray continuation
  EXPECT_FALSE(is_valid_utf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(is_valid_utf8("\xe0\x80\xaf"));      // overlong
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));      // surrogate U+D800
  EXPECT_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(is_valid_utf8("ok \xe2\x82"));       // cut short
}

TEST(WebSocketUtf8, ChecksTextFedInPieces) {
  const std::string text = "\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5 \xf0\x9f\x98\x80";
  for (std::size_t cut = 0; cut <= text.size(); ++cut) {
    utf8_validator v;
    const auto* p = reinterpret_cast<const unsigned char*>(text.data());
    ASSERT_TRUE(v.feed(p, cut)) << cut;
    ASSERT_TRUE(v.feed(p + cut, text.size() - cut)) << cut;
    EXPECT_TRUE(v.complete()) << cut;
  }
  utf8_validator v;
  EXPECT_TRUE(v.feed(reinterpret_cast<const unsigned char*>("\xe2\x82"), 2));
  EXPECT_FALSE(v.complete());
  EXPECT_FALSE(v.feed(reinterpret_cast<const unsigned char*>("A"), 1));
}

TEST(WebSocketHandshake, AcceptValueIsTheRfcExample) {
  // RFC 6455 section 1.3.
  EXPECT_EQ(websocket_accept_value("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
  EXPECT_TRUE(valid_websocket_key("dGhlIHNhbXBsZSBub25jZQ=="));
  EXPECT_FALSE(valid_websocket_key("dGhlIHNhbXBsZSBub25jZQ="));
  EXPECT_FALSE(valid_websocket_key("dGhlIHNhbXBsZSBub25jZR=="));  // bits past the 16 bytes
  EXPECT_FALSE(valid_websocket_key("dGhlIHNhbXBsZSBub25j!Q=="));
  const std::string key = websocket_random_key();
  EXPECT_TRUE(valid_websocket_key(key)) << key;
  EXPECT_NE(key, websocket_random_key());
}
