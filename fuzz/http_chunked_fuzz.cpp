// SPDX-License-Identifier: Apache-2.0
// Fuzzes the chunked decoder on its own, fed in pieces as a connection feeds it.
//
// Input layout: byte 0 picks the limits (bits 0-1 max_body, bits 2-3 max_trailer, each
// the default, f, a multiple of f or a fixed value, where f = byte 1 >> 3, so that
// every small limit and its edges are reachable) and how the round trip below encodes
// (bits 4-7); byte 1 % 8 is the number k of plan bytes that follow; the rest is the
// body. The plan bytes, repeated, give the length of each piece fed to decode()
// (b % 32, where 0 is a call with nothing new), and the chunk sizes of the round trip
// (b + 1). Most seeds start with "00": default limits, no plan.
//
// Two checks per input:
//  - the body as raw chunked bytes, decoded whole, in the planned pieces and byte by
//    byte, the region moving to new allocations between calls (the decoder keeps
//    offsets, so the caller may grow its buffer): every run ends the same way (status,
//    error code, bytes consumed, decoded bytes); consumed() never exceeds what was
//    given, body_size() never exceeds consumed() (the in-place move cannot overtake
//    its input) nor max_body; errors are 400, 413 or 431; bytes past consumed() (the
//    next request) are left as they were; and done, 413 and 431 agree, body and bytes
//    consumed included, with a plain reading of the framing (hex size, CRLF, data,
//    CRLF, ..., trailer lines, empty line) under the same limits.
//  - the body as payload, encoded as valid chunked framing (extensions, trailers,
//    leading zeros, upper-case hex, a size line of exactly 4 KiB, a next request
//    behind it): it decodes to exactly
//    the payload, or fails with 413 or 431 exactly where the limits say.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "ringio/http/chunked_decoder.hpp"

using ringio::http::chunked_decoder;
using status = chunked_decoder::status;

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

struct outcome {
  status st = status::need_more;
  int error = 0;
  std::size_t consumed = 0;
  std::string body;  // raw[0, body_size()) at the end
  bool operator==(const outcome&) const = default;
};

struct limits {
  std::uint64_t max_body;
  std::size_t max_trailer;
};

// Feeds `input` to a fresh decoder: `lengths` (cycled, each % 32) are the sizes of the
// successive pieces; none, or all zero, means one call with everything. The region
// moves to a new buffer (the old one freed, so a kept pointer shows up under ASan)
// whenever it outgrows its capacity, as a connection's buffer does, and, with `moves`,
// also before every call while it is under 256 bytes and every 8th call after that
// (moving on every call would make long inputs quadratic and slow the fuzzer down).
// After done, one more call with all the bytes must change nothing.
outcome feed(std::string_view input, std::string_view lengths, limits lim, bool moves) {
  std::size_t cycle = 0;
  for (unsigned char b : lengths) cycle += b % 32;
  chunked_decoder d(lim.max_body, lim.max_trailer);
  std::string buf;
  std::size_t prev_consumed = 0, prev_body = 0;
  status st = status::need_more;
  for (std::size_t call = 0; st == status::need_more; ++call) {
    std::size_t n = cycle == 0 ? input.size() : static_cast<unsigned char>(lengths[call % lengths.size()]) % 32;
    n = std::min(n, input.size() - buf.size());
    const bool forced = moves && (buf.size() < 256 || call % 8 == 0);
    if (forced || buf.size() + n > buf.capacity()) {
      std::string moved;
      moved.reserve(forced ? buf.size() + n : std::max(2 * buf.size(), buf.size() + n));
      moved.append(buf);
      buf.swap(moved);
    }
    buf.append(input.substr(buf.size(), n));
    const std::size_t given = buf.size();
    st = d.decode(buf.data(), given);
    require(d.consumed() <= given && d.body_size() <= d.consumed() && d.body_size() <= lim.max_body);
    require(d.consumed() >= prev_consumed && d.body_size() >= prev_body);
    prev_consumed = d.consumed();
    prev_body = d.body_size();
    if (st == status::error) {
      int e = d.error_status();
      require(e == 400 || e == 413 || e == 431);
    } else {
      require(d.error_status() == 0);
    }
    if (given == input.size() && st == status::need_more) break;  // input ends mid-body
  }
  if (st == status::done) {
    std::string all(input);
    all.replace(0, d.consumed(), buf, 0, d.consumed());
    require(d.decode(all.data(), all.size()) == status::done && d.consumed() == prev_consumed &&
            d.body_size() == prev_body);
    require(std::string_view(buf).substr(d.consumed()) == input.substr(d.consumed(), buf.size() - d.consumed()));
  }
  return {st, d.error_status(), d.consumed(), buf.substr(0, d.body_size())};
}

// The framing read plainly, with the limits as the header states them, trusting what
// the decoder checks more closely (size-line and trailer grammar, bare LF): "done",
// 413 or 431 with the body so far and the bytes used (where the decoder stops), or
// "unread" where this reading finds no end. A trailer section counts its bytes up to
// the final CR; the first byte over max_trailer is refused.
struct plain_outcome {
  int verdict = -1;  // 0: done, 413, 431; -1: unread
  std::string body;
  std::size_t used = 0;
};

plain_outcome plain_decode(std::string_view in, limits lim) {
  plain_outcome r;
  std::size_t pos = 0;
  for (;;) {
    auto eol = in.find("\r\n", pos);
    if (eol == std::string_view::npos) return r;
    std::uint64_t size = 0;
    std::size_t digits = 0;
    for (std::size_t i = pos; i < eol; ++i, ++digits) {
      char c = in[i];
      int h = c >= '0' && c <= '9'   ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                     : -1;
      if (h < 0) break;
      if (size >> 60) return r;
      size = size * 16 + static_cast<unsigned>(h);
    }
    if (digits == 0) return r;
    pos = eol + 2;
    if (size == 0) break;
    if (size > lim.max_body - r.body.size()) return {413, std::move(r.body), pos};
    if (in.size() - pos < size || in.size() - pos - size < 2 || in.substr(pos + size, 2) != "\r\n") return r;
    r.body.append(in.substr(pos, size));
    pos += size + 2;
  }
  const std::size_t trailer_start = pos;
  for (;;) {  // trailer lines up to the empty one
    auto eol = in.find("\r\n", pos);
    const bool empty = eol == pos;
    const std::size_t counted_end = eol == std::string_view::npos ? in.size() : empty ? eol + 1 : eol + 2;
    if (counted_end - trailer_start > lim.max_trailer)
      return {431, std::move(r.body), trailer_start + lim.max_trailer + 1};
    if (eol == std::string_view::npos) return r;
    pos = eol + 2;
    if (empty) break;
  }
  return {0, std::move(r.body), pos};
}

std::string hex(std::uint64_t v, bool upper) {
  const char* digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  std::string s;
  do {
    s.insert(s.begin(), digits[v % 16]);
    v /= 16;
  } while (v != 0);
  return s;
}

// Encodes `payload` as valid chunked framing and checks what the decoder makes of it.
void round_trip(std::string_view payload, std::string_view plan, unsigned style, limits lim) {
  static constexpr std::string_view exts[] = {";a", ";name=value", " ;q=\"x\\\"y\"", "; n = v", ";e=\"\";f"};
  static constexpr std::string_view trailers[] = {"X-Sum: 1", "T:", "Checksum:  a b\t"};
  const bool zeros = style & 1, upper = style & 2, ext = style & 4, trailer = style & 8;
  std::string enc;
  std::uint64_t out = 0;
  int expect_error = 0;
  // With every style bit set, the last size line is padded to exactly the 4 KiB a
  // size line may take (rarely: stepping through it slows every run down).
  auto size_line = [&](std::uint64_t n, std::size_t i, bool longest = false) {
    const std::size_t line_start = enc.size();
    enc += (zeros ? "000" : "") + hex(n, upper);
    if (ext) enc += exts[i % std::size(exts)];
    if (longest) {
      const std::size_t room = 4096 - (enc.size() - line_start) - 5;
      enc.append(";pad=").append(room, 'p');
    }
    enc += "\r\n";
  };
  std::size_t i = 0;
  for (std::size_t pos = 0; pos < payload.size(); ++i) {
    std::size_t n = plan.empty() ? payload.size() : static_cast<unsigned char>(plan[i % plan.size()]) + 1u;
    n = std::min(n, payload.size() - pos);
    size_line(n, i);
    if (expect_error == 0 && n > lim.max_body - out) expect_error = 413;  // refused at its size line
    out += n;
    enc.append(payload.substr(pos, n)).append("\r\n");
    pos += n;
  }
  size_line(0, i, style == 15);
  // The decoder counts the trailer section's bytes up to the final CR.
  std::size_t trailer_bytes = 1;
  if (trailer) {
    for (std::string_view t : trailers) {
      enc.append(t).append("\r\n");
      trailer_bytes += t.size() + 2;
    }
  }
  enc += "\r\n";
  if (expect_error == 0 && trailer_bytes > lim.max_trailer) expect_error = 431;
  const std::size_t framed = enc.size();
  enc += "GET / HTTP/1.1\r\n";  // the next request, which must stay unread

  for (outcome o : {feed(enc, {}, lim, false), feed(enc, plan, lim, true)}) {
    if (expect_error != 0) {
      require(o.st == status::error && o.error == expect_error);
    } else {
      require(o.st == status::done && o.consumed == framed && o.body == payload);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const unsigned f = data[1] >> 3;
  const std::uint64_t max_bodies[] = {1 << 20, f, f * 8u, 300};
  const std::size_t max_trailers[] = {16 * 1024, f, f * 4u, 100};
  const limits lim{max_bodies[data[0] & 3], max_trailers[(data[0] >> 2) & 3]};
  const std::size_t k = std::min<std::size_t>(data[1] % 8, size - 2);
  const std::string_view plan = in.substr(2, k), body = in.substr(2 + k);

  const outcome whole = feed(body, {}, lim, false);
  require(feed(body, plan, lim, true) == whole);
  require(feed(body, "\x01", lim, false) == whole);  // byte by byte
  // Done, 413 and 431 must be what the plain reading says, at the same byte; where the
  // plain reading ends, the decoder must not wait for more.
  const plain_outcome plain = plain_decode(body, lim);
  const int verdict = whole.st == status::done ? 0 : whole.st == status::error ? whole.error : -1;
  if (verdict == 0 || verdict == 413 || verdict == 431)
    require(plain.verdict == verdict && plain.body == whole.body && plain.used == whole.consumed);
  if (plain.verdict != -1) require(whole.st != status::need_more);

  round_trip(body, plan, data[0] >> 4, lim);
  return 0;
}
