// SPDX-License-Identifier: Apache-2.0
// URL parsing for the client: strict, allocation-free, views into the input.
#include "ringio/http/url.hpp"

#include <arpa/inet.h>

#include "ringio/http/client_error.hpp"
#include "ringio/http/header_list.hpp"

namespace ringio::http {
namespace {

bool is_hex(char c) noexcept { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool is_alnum(char c) noexcept { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// Printable ASCII without space, with every '%' starting a valid escape.
bool valid_target(std::string_view t) noexcept {
  for (std::size_t i = 0; i < t.size(); ++i) {
    const auto c = static_cast<unsigned char>(t[i]);
    if (c <= 0x20 || c >= 0x7f) return false;
    if (c == '%' && (i + 2 >= t.size() || !is_hex(t[i + 1]) || !is_hex(t[i + 2]))) return false;
  }
  return true;
}

bool valid_reg_name(std::string_view h) noexcept {
  if (h.empty() || h.size() > 253) return false;
  for (char c : h)
    if (!is_alnum(c) && c != '-' && c != '.' && c != '_') return false;
  return true;
}

// "http://" or "https://" (any case) at the start: the length of the prefix, 0 if none.
std::size_t scheme_prefix(std::string_view text, bool& tls) noexcept {
  if (text.size() >= 7 && iequals(text.substr(0, 7), "http://")) {
    tls = false;
    return 7;
  }
  if (text.size() >= 8 && iequals(text.substr(0, 8), "https://")) {
    tls = true;
    return 8;
  }
  return 0;
}

bool has_scheme(std::string_view s) noexcept {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == ':') return i > 0;
    if (!is_alnum(c) && c != '+' && c != '-' && c != '.') return false;
  }
  return false;
}

// Section 5.2.4: removes "." and ".." segments from a path.
std::string remove_dot_segments(std::string_view in) {
  std::string out;
  const auto drop_last = [&out] {
    const std::size_t slash = out.rfind('/');
    out.erase(slash == std::string::npos ? 0 : slash);
  };
  while (!in.empty()) {
    if (in.starts_with("../")) {
      in.remove_prefix(3);
    } else if (in.starts_with("./")) {
      in.remove_prefix(2);
    } else if (in.starts_with("/./")) {
      in.remove_prefix(2);
    } else if (in == "/.") {
      in = "/";
    } else if (in.starts_with("/../")) {
      in.remove_prefix(3);
      drop_last();
    } else if (in == "/..") {
      in = "/";
      drop_last();
    } else if (in == "." || in == "..") {
      in = {};
    } else {
      const std::size_t next = in.find('/', 1);
      const std::size_t n = next == std::string_view::npos ? in.size() : next;
      out.append(in.substr(0, n));
      in.remove_prefix(n);
    }
  }
  return out;
}

}  // namespace

bool url::same_origin(const url& other) const noexcept {
  return tls == other.tls && port == other.port && iequals(host, other.host);
}

result<url> parse_url(std::string_view text) {
  const auto bad = unexpected(make_error_code(client_errc::bad_url));
  url u;
  const std::size_t start = scheme_prefix(text, u.tls);
  if (start == 0) return bad;
  text.remove_prefix(start);
  if (auto hash = text.find('#'); hash != std::string_view::npos) text = text.substr(0, hash);
  const std::size_t auth_end = text.find_first_of("/?");
  std::string_view authority = text.substr(0, auth_end);
  u.target = auth_end == std::string_view::npos ? std::string_view{} : text.substr(auth_end);
  if (authority.find('@') != std::string_view::npos) return bad;
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return bad;
    u.host = authority.substr(1, close - 1);
    u.ipv6_literal = true;
    std::string_view rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return bad;
      port_text = rest.substr(1);
      u.explicit_port = true;
    }
    char literal[INET6_ADDRSTRLEN + 1];
    in6_addr addr{};
    if (u.host.empty() || u.host.size() >= sizeof literal) return bad;
    u.host.copy(literal, u.host.size());
    literal[u.host.size()] = '\0';
    if (::inet_pton(AF_INET6, literal, &addr) != 1) return bad;
  } else {
    const std::size_t colon = authority.find(':');
    u.host = authority.substr(0, colon);
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
      u.explicit_port = true;
    }
    if (!valid_reg_name(u.host)) return bad;
  }
  u.port = u.default_port();
  if (u.explicit_port) {
    if (port_text.empty() || port_text.size() > 5) return bad;
    unsigned value = 0;
    for (char c : port_text) {
      if (c < '0' || c > '9') return bad;
      value = value * 10 + static_cast<unsigned>(c - '0');
    }
    if (value == 0 || value > 65535) return bad;
    u.port = static_cast<std::uint16_t>(value);
  }
  if (!valid_target(u.target)) return bad;
  return u;
}

result<std::string> resolve_location(const url& base, std::string_view location) {
  const auto bad = unexpected(make_error_code(client_errc::bad_redirect));
  while (!location.empty() && (location.front() == ' ' || location.front() == '\t')) location.remove_prefix(1);
  while (!location.empty() && (location.back() == ' ' || location.back() == '\t')) location.remove_suffix(1);
  if (location.empty()) return bad;  // the base itself: a redirect to where it came from
  // The reference's parts (RFC 3986 section 5.2.2): [scheme:][//authority]path[?query][#fragment]
  std::string_view fragment;
  if (const std::size_t hash = location.find('#'); hash != std::string_view::npos) {
    fragment = location.substr(hash);
    location = location.substr(0, hash);
  }
  std::string_view query;
  if (const std::size_t q = location.find('?'); q != std::string_view::npos) {
    query = location.substr(q);
    location = location.substr(0, q);
  }
  std::string out;
  if (has_scheme(location)) {
    bool tls = false;
    const std::size_t prefix = scheme_prefix(location, tls);
    if (prefix == 0) return bad;  // ftp:, mailto:, or "http:" without an authority
    const std::size_t path = location.find('/', prefix);
    out.append(location.substr(0, path));
    if (path != std::string_view::npos) out.append(remove_dot_segments(location.substr(path)));
  } else if (location.starts_with("//")) {
    out = base.tls ? "https:" : "http:";
    const std::size_t path = location.find('/', 2);
    out.append(location.substr(0, path));
    if (path != std::string_view::npos) out.append(remove_dot_segments(location.substr(path)));
  } else {
    out = base.tls ? "https://" : "http://";
    if (base.ipv6_literal) out += '[';
    out.append(base.host);
    if (base.ipv6_literal) out += ']';
    if (base.explicit_port) {
      out += ':';
      out += std::to_string(base.port);
    }
    const std::size_t base_q = base.target.find('?');
    const std::string_view base_path = base.target.substr(0, base_q);
    if (location.empty()) {
      out.append(base_path);
      if (query.empty() && base_q != std::string_view::npos) query = base.target.substr(base_q);
    } else if (location.front() == '/') {
      out.append(remove_dot_segments(location));
    } else {
      // Merge (section 5.2.3): the base path up to its last '/', "/" when it is empty.
      const std::size_t slash = base_path.rfind('/');
      std::string merged(slash == std::string_view::npos ? std::string_view("/") : base_path.substr(0, slash + 1));
      merged.append(location);
      out.append(remove_dot_segments(merged));
    }
  }
  out.append(query);
  out.append(fragment);
  return out;
}

}  // namespace ringio::http
