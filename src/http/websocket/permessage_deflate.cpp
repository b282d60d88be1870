// SPDX-License-Identifier: Apache-2.0
#include "permessage_deflate.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <stdexcept>
#include <vector>

#include "handshake.hpp"

namespace ringio::http::detail {

namespace {

constexpr std::string_view extension_name = "permessage-deflate";
constexpr unsigned char tail[4] = {0x00, 0x00, 0xff, 0xff};  // RFC 7692 section 7.2.1

std::string_view trim(std::string_view t) noexcept {
  while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
  while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
  return t;
}

// One extension of a Sec-WebSocket-Extensions list: its name and parameters.
struct parameter {
  std::string_view name;
  std::string value;  // unquoted
  bool has_value = false;
};
struct extension {
  std::string_view name;
  std::vector<parameter> params;
  bool well_formed = true;
};

// "name; a; b=1; c=\"2\"" (RFC 6455 section 9.1, a quoted-string value unquoted).
extension parse_extension(std::string_view element) {
  extension e;
  std::size_t semi = element.find(';');
  e.name = trim(element.substr(0, semi));
  while (semi != std::string_view::npos) {
    element = element.substr(semi + 1);
    semi = element.find(';');
    const std::string_view item = trim(element.substr(0, semi));
    const std::size_t eq = item.find('=');
    parameter p;
    p.name = trim(item.substr(0, eq));
    if (p.name.empty()) e.well_formed = false;
    if (eq != std::string_view::npos) {
      p.has_value = true;
      std::string_view v = trim(item.substr(eq + 1));
      if (v.size() >= 2 && v.front() == '"' && v.back() == '"') {
        v = v.substr(1, v.size() - 2);
        for (std::size_t i = 0; i < v.size(); ++i) {
          if (v[i] == '\\' && i + 1 < v.size()) ++i;
          p.value += v[i];
        }
      } else {
        p.value.assign(v);
      }
      if (p.value.empty()) e.well_formed = false;
    }
    e.params.push_back(std::move(p));
  }
  return e;
}

std::vector<extension> parse_extensions(std::string_view list) {
  std::vector<extension> out;
  for_each_token(list, [&](std::string_view element) { out.push_back(parse_extension(element)); });
  return out;
}

// A window size value: "8" to "15", no leading zero (RFC 7692 section 7.1.2.1); 0 if not.
int window_bits(const std::string& v) noexcept {
  if (v.size() == 1 && v[0] >= '8' && v[0] <= '9') return v[0] - '0';
  if (v.size() == 2 && v[0] == '1' && v[1] >= '0' && v[1] <= '5') return 10 + (v[1] - '0');
  return 0;
}

// The parameters of one permessage-deflate element, checked (RFC 7692 section 7.1).
struct deflate_params {
  bool server_no_context_takeover = false;
  bool client_no_context_takeover = false;
  int server_max_window_bits = 0;  // 0: absent
  bool client_max_window_bits = false;
  int client_max_window_bits_value = 0;  // 0: absent or without a value
};

// False for an unknown, repeated or badly valued parameter.
bool read_params(const extension& e, deflate_params& out) {
  if (!e.well_formed) return false;
  bool seen[4] = {};
  for (const parameter& p : e.params) {
    int which = -1;
    if (p.name == "server_no_context_takeover") {
      which = 0;
      out.server_no_context_takeover = true;
      if (p.has_value) return false;
    } else if (p.name == "client_no_context_takeover") {
      which = 1;
      out.client_no_context_takeover = true;
      if (p.has_value) return false;
    } else if (p.name == "server_max_window_bits") {
      which = 2;
      out.server_max_window_bits = window_bits(p.value);
      if (out.server_max_window_bits == 0) return false;  // a value is required
    } else if (p.name == "client_max_window_bits") {
      which = 3;
      out.client_max_window_bits = true;
      if (p.has_value) {
        out.client_max_window_bits_value = window_bits(p.value);
        if (out.client_max_window_bits_value == 0) return false;
      }
    } else {
      return false;
    }
    if (seen[which]) return false;
    seen[which] = true;
  }
  return true;
}

int clamp_bits(int bits, int low) noexcept { return std::clamp(bits, low, 15); }

// zlib allocates through operator new like the rest of the library (and the allocation
// tests see it): once per stream, at its start.
voidpf z_alloc(voidpf, uInt items, uInt size) { return ::operator new(std::size_t{items} * size, std::nothrow); }
void z_free(voidpf, voidpf p) { ::operator delete(p); }

}  // namespace

std::string deflate_offer(const websocket_deflate_options& o) {
  std::string offer(extension_name);
  const int ours = clamp_bits(o.max_window_bits, 9);
  offer += "; client_max_window_bits";  // the server may choose our window
  if (ours < 15) offer.append("=").append(std::to_string(ours));
  const int peer = clamp_bits(o.peer_max_window_bits, 8);
  if (peer < 15) offer.append("; server_max_window_bits=").append(std::to_string(peer));
  if (o.peer_no_context_takeover) offer += "; server_no_context_takeover";
  if (o.no_context_takeover) offer += "; client_no_context_takeover";
  return offer;
}

bool accept_deflate_offer(const header_list& request_headers, const websocket_deflate_options& o, std::string& response,
                          deflate_agreement& agreed) {
  if (!o.enabled) return false;
  for (const header& h : request_headers) {
    if (!iequals(h.name, "sec-websocket-extensions")) continue;
    for (const extension& e : parse_extensions(h.value)) {
      deflate_params p;
      if (!iequals(e.name, extension_name) || !read_params(e, p)) continue;  // declined: the next offer
      int send_bits = clamp_bits(o.max_window_bits, 9);
      if (p.server_max_window_bits != 0) send_bits = std::min(send_bits, p.server_max_window_bits);
      response.assign(extension_name);
      const bool server_reset = p.server_no_context_takeover || o.no_context_takeover;
      const bool client_reset = p.client_no_context_takeover || o.peer_no_context_takeover;
      if (server_reset) response += "; server_no_context_takeover";
      if (client_reset) response += "; client_no_context_takeover";
      if (p.server_max_window_bits != 0 || send_bits < 15)
        response.append("; server_max_window_bits=").append(std::to_string(send_bits));
      if (p.client_max_window_bits) {  // only then may the answer name it
        int client_bits = clamp_bits(o.peer_max_window_bits, 8);
        if (p.client_max_window_bits_value != 0) client_bits = std::min(client_bits, p.client_max_window_bits_value);
        if (client_bits < 15) response.append("; client_max_window_bits=").append(std::to_string(client_bits));
      }
      agreed = {true, server_reset, client_reset, send_bits};
      return true;
    }
  }
  return false;
}

bool check_deflate_answer(std::string_view answer, const websocket_deflate_options& o, bool offered,
                          deflate_agreement& agreed) {
  agreed = {};
  const std::vector<extension> list = parse_extensions(answer);
  if (list.empty()) return trim(answer).empty();
  if (!offered || list.size() != 1 || !iequals(list[0].name, extension_name)) return false;
  deflate_params p;
  if (!read_params(list[0], p)) return false;
  const int peer_offered = clamp_bits(o.peer_max_window_bits, 8);
  if (peer_offered < 15 && (p.server_max_window_bits == 0 || p.server_max_window_bits > peer_offered)) return false;
  const int ours = clamp_bits(o.max_window_bits, 9);
  int send_bits = ours;
  if (p.client_max_window_bits) {
    if (p.client_max_window_bits_value == 0 || p.client_max_window_bits_value > ours) return false;
    send_bits = p.client_max_window_bits_value;
  }
  if (o.peer_no_context_takeover && !p.server_no_context_takeover) return false;  // asked for, not granted
  agreed = {true, o.no_context_takeover || p.client_no_context_takeover, p.server_no_context_takeover, send_bits};
  return true;
}

struct deflate_codec::streams {
  z_stream deflater{};
  z_stream inflater{};
  bool deflater_ready = false;
};

deflate_codec::deflate_codec(const deflate_agreement& agreed, int level)
    : z_(std::make_unique<streams>()),
      send_reset_(agreed.send_no_context_takeover),
      receive_reset_(agreed.receive_no_context_takeover) {
  z_->inflater.zalloc = z_->deflater.zalloc = z_alloc;
  z_->inflater.zfree = z_->deflater.zfree = z_free;
  // The inflater takes the largest window: it inflates whatever window the peer used.
  if (inflateInit2(&z_->inflater, -15) != Z_OK) throw std::bad_alloc();
  if (level > 0 && agreed.send_window_bits >= 9) {
    const int r =
        deflateInit2(&z_->deflater, std::min(level, 9), Z_DEFLATED, -agreed.send_window_bits, 8, Z_DEFAULT_STRATEGY);
    if (r != Z_OK) {
      inflateEnd(&z_->inflater);
      throw std::bad_alloc();
    }
    z_->deflater_ready = true;
    compress_ok_ = true;
  }
}

deflate_codec::~deflate_codec() {
  inflateEnd(&z_->inflater);
  if (z_->deflater_ready) deflateEnd(&z_->deflater);
}

std::string_view deflate_codec::compress(std::string_view message) {
  // An empty message is an empty stored block (RFC 7692 section 7.2.3.6): zlib has
  // nothing to flush a second time.
  static constexpr char empty_block[1] = {0};
  if (message.empty()) return {empty_block, 1};
  z_stream& z = z_->deflater;
  const std::size_t bound = deflateBound(&z, message.size()) + 16;
  if (deflated_.size() < bound) deflated_.resize(bound);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(message.data()));
  z.avail_in = static_cast<uInt>(message.size());
  std::size_t produced = 0;
  for (;;) {
    z.next_out = reinterpret_cast<Bytef*>(deflated_.data() + produced);
    z.avail_out = static_cast<uInt>(deflated_.size() - produced);
    const int r = deflate(&z, Z_SYNC_FLUSH);
    produced = deflated_.size() - z.avail_out;
    if (r != Z_OK && r != Z_BUF_ERROR) return {};
    if (z.avail_in == 0 && z.avail_out > 0) break;  // all in, and the flush is whole
    deflated_.resize(deflated_.size() * 2);
  }
  if (send_reset_) deflateReset(&z);
  // A sync flush ends with an empty stored block, 00 00 ff ff: it does not travel.
  if (produced < 4 || std::memcmp(deflated_.data() + produced - 4, tail, 4) != 0) return {};
  return {deflated_.data(), produced - 4};
}

deflate_codec::inflate_status deflate_codec::inflate_bytes(const unsigned char* data, std::size_t size,
                                                           std::size_t limit) {
  z_stream& z = z_->inflater;
  z.next_in = const_cast<Bytef*>(data);
  z.avail_in = static_cast<uInt>(size);
  while (z.avail_in > 0) {
    if (size_ == out_.size()) {  // room for more, never past limit + 1: a bomb stops there
      if (size_ > limit) return inflate_status::too_big;
      out_.resize(std::min(limit + 1, std::max(out_.size() * 2, std::size_t{4096})));
    }
    z.next_out = reinterpret_cast<Bytef*>(out_.data() + size_);
    z.avail_out = static_cast<uInt>(std::min<std::size_t>(out_.size() - size_, 1u << 30));
    const uInt room = z.avail_out;
    const int r = ::inflate(&z, Z_SYNC_FLUSH);
    size_ += room - z.avail_out;
    if (size_ > limit) return inflate_status::too_big;
    if (r == Z_STREAM_END) {
      inflateReset(&z);  // a final block: whatever follows starts afresh
      continue;
    }
    if (r == Z_BUF_ERROR && z.avail_out > 0) break;  // needs more input
    if (r != Z_OK && r != Z_BUF_ERROR) return inflate_status::bad_data;
  }
  return inflate_status::ok;
}

deflate_codec::inflate_status deflate_codec::inflate(const unsigned char* data, std::size_t size, bool last,
                                                     std::size_t limit) {
  // zlib's avail_in is 32 bits: feed long payloads in pieces.
  while (size > 0) {
    const std::size_t piece = std::min<std::size_t>(size, 1u << 30);
    const inflate_status st = inflate_bytes(data, piece, limit);
    if (st != inflate_status::ok) return st;
    data += piece;
    size -= piece;
  }
  if (!last) return inflate_status::ok;
  const inflate_status st = inflate_bytes(tail, sizeof(tail), limit);
  if (st != inflate_status::ok) return st;
  // Output zlib still holds back once all input is in: drain it.
  z_stream& z = z_->inflater;
  for (;;) {
    if (size_ == out_.size()) {
      if (size_ > limit) return inflate_status::too_big;
      out_.resize(std::min(limit + 1, std::max(out_.size() * 2, std::size_t{4096})));
    }
    z.next_out = reinterpret_cast<Bytef*>(out_.data() + size_);
    z.avail_out = static_cast<uInt>(std::min<std::size_t>(out_.size() - size_, 1u << 30));
    const uInt room = z.avail_out;
    const int r = ::inflate(&z, Z_SYNC_FLUSH);
    size_ += room - z.avail_out;
    if (size_ > limit) return inflate_status::too_big;
    if (z.avail_out > 0 || (r != Z_OK)) {
      if (r == Z_STREAM_END) inflateReset(&z);
      if (r == Z_DATA_ERROR || r == Z_MEM_ERROR || r == Z_NEED_DICT || r == Z_STREAM_ERROR)
        return inflate_status::bad_data;
      break;
    }
  }
  return inflate_status::ok;
}

void deflate_codec::end_message() noexcept {
  if (receive_reset_) inflateReset(&z_->inflater);
}

}  // namespace ringio::http::detail
