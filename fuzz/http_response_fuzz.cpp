// SPDX-License-Identifier: Apache-2.0
// Fuzzes the client's response parsing: parse_response_head on the input (whole, and on
// every prefix up to the head's end, which must never claim a different head), then the
// bytes after the head through chunked_reader in planned pieces and output sizes.
//
// Input layout: byte 0 bit 0: the request was HEAD; bits 1-7: the output buffer size
// for chunked decoding (1-127); byte 1: the piece length (1-255, 0 is 1); the rest is
// the response.
//
// Checks: a complete head's length is within the input and ends with CRLF CRLF; a
// shorter prefix of it is "need more" or the same error class never a complete head;
// framing agrees with the status (1xx, 204, 304 and HEAD have none) and keep_alive is
// false for until_close; the chunked reader never consumes more than given nor writes
// more than the buffer, and decoding in pieces gives the same body and outcome as
// decoding the rest whole.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "ringio/http/chunked_reader.hpp"
#include "ringio/http/response_head.hpp"

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

struct decoded {
  bool ok = true;
  bool done = false;
  std::string body;
};

decoded decode(std::string_view raw, std::size_t piece, std::size_t out_size) {
  ringio::http::chunked_reader reader;
  decoded d;
  std::vector<char> out(out_size);
  std::string pending;
  std::size_t fed = 0;
  while (!reader.done()) {
    if (fed < raw.size()) {
      const std::size_t n = std::min(piece, raw.size() - fed);
      pending.append(raw.substr(fed, n));
      fed += n;
    } else if (pending.empty()) {
      break;
    }
    for (;;) {
      std::size_t produced = 0;
      auto used = reader.decode(pending, std::span<char>(out.data(), out.size()), produced);
      if (!used) {
        d.ok = false;
        return d;
      }
      require(*used <= pending.size());
      require(produced <= out.size());
      d.body.append(out.data(), produced);
      pending.erase(0, *used);
      if (reader.done() || produced < out.size()) break;
    }
  }
  d.done = reader.done();
  return d;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const bool head_request = (data[0] & 1) != 0;
  const std::size_t out_size = std::max<std::size_t>(1, data[0] >> 1);
  const std::size_t piece = data[1] == 0 ? 1 : data[1];
  const std::string_view text(reinterpret_cast<const char*>(data) + 2, size - 2);

  ringio::http::response_head head;
  auto whole = ringio::http::parse_response_head(text, head_request, head, 4096);
  if (!whole || *whole == 0) return 0;
  const std::size_t len = *whole;
  require(len <= text.size() && len >= 4 && text.substr(len - 4, 4) == "\r\n\r\n");
  require(head.status >= 100 && head.status <= 999);
  if (head_request || head.status < 200 || head.status == 204 || head.status == 304)
    require(head.framing == ringio::http::body_framing::none);
  if (head.framing == ringio::http::body_framing::until_close) require(!head.keep_alive);
  for (std::size_t cut = 0; cut < len; cut += 7) {
    ringio::http::response_head partial;
    auto r = ringio::http::parse_response_head(text.substr(0, cut), head_request, partial, 4096);
    require(!r || *r == 0);
  }
  if (head.framing == ringio::http::body_framing::chunked) {
    const std::string_view rest = text.substr(len);
    const decoded a = decode(rest, piece, out_size);
    const decoded b = decode(rest, rest.size() + 1, 4096);
    require(a.ok == b.ok);
    if (a.ok) {
      require(a.done == b.done);
      require(a.body == b.body);
    }
  }
  return 0;
}
