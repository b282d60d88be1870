// SPDX-License-Identifier: Apache-2.0
// Fuzzes the request parser and the chunked decoder: no crash, no read outside the
// input, every view inside the head, and the same result whether the input arrives
// whole or in pieces that move in memory between calls (as the connection's buffer does).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "ringio/http/chunked_decoder.hpp"
#include "ringio/http/request_parser.hpp"

using namespace ringio::http;

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

bool inside(std::string_view v, std::string_view region) {
  return v.empty() || (v.data() >= region.data() && v.data() + v.size() <= region.data() + region.size());
}

void check_views(const request& req, std::string_view head) {
  require(inside(req.method_name(), head) && inside(req.target(), head) && inside(req.query(), head));
  require(inside(req.path(), head) || req.path() == "/");
  require(req.headers().size() <= header_list::capacity);
  for (const header& h : req.headers()) require(inside(h.name, head) && inside(h.value, head) && !h.name.empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  constexpr std::size_t max_head = 4096;

  request whole;
  request_parser p(max_head);
  parse_result r = p.parse(input, whole);
  if (r.state == parse_state::complete) {
    require(r.size <= input.size() && r.size <= max_head);
    check_views(whole, std::string_view(input).substr(0, r.size));
  } else if (r.state == parse_state::error) {
    require(r.status == 400 || r.status == 417 || r.status == 431 || r.status == 501 || r.status == 505);
  }

  // The same bytes in three pieces, the buffer moving after each.
  std::size_t cut1 = size == 0 ? 0 : data[0] % (size + 1), cut2 = cut1 + (size - cut1) / 2;
  std::string buf;
  request pieces;
  request_parser q(max_head);
  parse_result r2;
  for (std::size_t end : {cut1, cut2, size}) {
    std::string moved = input.substr(0, end);
    pieces.rebase(buf.data(), buf.size(), moved.data());
    buf.swap(moved);
    r2 = q.parse(buf, pieces);
    if (r2.state != parse_state::incomplete) break;
  }
  require(r2.state == r.state && r2.status == r.status && r2.size == r.size);
  if (r.state == parse_state::complete) {
    require(pieces.headers().size() == whole.headers().size() && pieces.target() == whole.target());
    for (std::size_t i = 0; i < whole.headers().size(); ++i)
      require(pieces.headers()[i].name == whole.headers()[i].name &&
              pieces.headers()[i].value == whole.headers()[i].value);
  }

  // The body as chunked, decoded in place, whole and byte by byte.
  std::size_t start = r.state == parse_state::complete ? r.size : 0;
  std::string body = input.substr(start), body2 = body;
  chunked_decoder d(1 << 16, max_head), e(1 << 16, max_head);
  auto st = d.decode(body.data(), body.size());
  require(d.body_size() <= d.consumed() && d.consumed() <= body.size());
  auto st2 = chunked_decoder::status::need_more;
  for (std::size_t n = 1; n <= body2.size() && st2 == chunked_decoder::status::need_more; ++n)
    st2 = e.decode(body2.data(), n);
  require(st == st2 && d.body_size() == e.body_size());
  if (st == chunked_decoder::status::done)
    require(d.consumed() == e.consumed() && body.compare(0, d.body_size(), body2, 0, e.body_size()) == 0);
  if (st == chunked_decoder::status::error) require(d.error_status() == e.error_status());
  return 0;
}
