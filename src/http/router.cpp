// SPDX-License-Identifier: Apache-2.0
#include "ringio/http/router.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "percent_coding.hpp"
#include "ringio/http/status.hpp"

namespace ringio::http {
namespace {

task<response> status_page(int status, std::string allow) {
  response r = response::borrowed(status, reason_phrase(status));
  if (!allow.empty()) r.set_header("Allow", allow);
  co_return r;
}

task<response> allow_page(std::string allow) {
  response r(200);  // RFC 9110 9.3.7: no content, so Content-Length: 0 (not 204)
  r.set_header("Allow", allow);
  co_return r;
}

void reject_pattern(std::string_view path, const char* why) {
  throw std::invalid_argument("router: bad route pattern \"" + std::string(path) + "\": " + why);
}

bool name_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

}  // namespace

router& router::route(method m, std::string path, handler h) {
  entry e{std::move(path), std::move(h), m, false, false, {}};
  if (e.path.find_first_of("{}") == std::string::npos) {
    routes_.push_back(std::move(e));
    return *this;
  }
  const std::string_view p = e.path;
  if (p.empty() || p[0] != '/') reject_pattern(p, "it must start with '/'");
  std::size_t captured = 0;
  for (std::size_t at = 1; at <= p.size();) {
    std::size_t end = std::min(p.find('/', at), p.size());
    std::string_view seg = p.substr(at, end - at);
    segment s{static_cast<std::uint32_t>(at), static_cast<std::uint32_t>(seg.size()), segment_kind::literal};
    if (seg.find_first_of("{}") != std::string_view::npos) {
      if (seg.size() < 3 || seg.front() != '{' || seg.back() != '}')
        reject_pattern(p, "a '{name}' must be a whole segment");
      seg = seg.substr(1, seg.size() - 2);
      s.kind = segment_kind::param;
      if (seg.ends_with("...")) {
        if (end != p.size()) reject_pattern(p, "'{name...}' must be the last segment");
        seg.remove_suffix(3);
        s.kind = segment_kind::rest;
      }
      if (seg.empty() || !std::all_of(seg.begin(), seg.end(), name_char))
        reject_pattern(p, "a parameter name must be letters, digits and '_'");
      for (const segment& other : e.segments)
        if (other.kind != segment_kind::literal && p.substr(other.pos, other.len) == seg)
          reject_pattern(p, "a parameter name is used twice");
      if (++captured > request::max_route_params) reject_pattern(p, "too many parameters");
      s.pos = static_cast<std::uint32_t>(seg.data() - p.data());
      s.len = static_cast<std::uint32_t>(seg.size());
    }
    e.segments.push_back(s);
    at = end + 1;
  }
  routes_.push_back(std::move(e));
  return *this;
}

router& router::prefix(std::string path_prefix, handler h) {
  routes_.push_back({std::move(path_prefix), std::move(h), method::get, true, true, {}});
  return *this;
}

router& router::prefix(method m, std::string path_prefix, handler h) {
  routes_.push_back({std::move(path_prefix), std::move(h), m, false, true, {}});
  return *this;
}

bool router::method_matches(const entry& e, method m) const noexcept { return e.any_method || e.m == m; }

// A pattern matches segment by segment; a request path always starts with '/' (or is
// "*", which no pattern matches).
bool router::path_matches(const entry& e, std::string_view path, captures* out) noexcept {
  if (e.is_prefix) return path != "*" && path.starts_with(e.path);
  if (e.segments.empty()) return path == e.path;
  if (path.empty() || path[0] != '/') return false;
  std::size_t count = 0;
  std::size_t at = 1;  // start of the path's current segment; past the end once it ran out
  for (const segment& s : e.segments) {
    if (at > path.size()) return false;
    std::string_view piece;
    if (s.kind == segment_kind::rest) {
      piece = path.substr(at);
      at = path.size() + 1;
    } else {
      std::size_t end = std::min(path.find('/', at), path.size());
      piece = path.substr(at, end - at);
      at = end + 1;
    }
    if (s.kind == segment_kind::literal) {
      if (piece != std::string_view(e.path).substr(s.pos, s.len)) return false;
      continue;
    }
    if ((s.kind == segment_kind::param && piece.empty()) || !detail::clean_capture(piece)) return false;
    if (out != nullptr) out->raw[count] = piece;
    ++count;
  }
  if (at != path.size() + 1) return false;  // path segments left over
  if (out != nullptr) out->count = count;
  return true;
}

// > 0 when `a` is the more specific of two patterns matching the same path.
int router::compare_patterns(const entry& a, const entry& b) noexcept {
  std::size_t n = std::min(a.segments.size(), b.segments.size());
  for (std::size_t i = 0; i < n; ++i) {
    // literal (0) beats param (1) beats rest (2)
    int ka = static_cast<int>(a.segments[i].kind), kb = static_cast<int>(b.segments[i].kind);
    if (ka != kb) return kb - ka;
  }
  return 0;
}

const router::entry* router::match(const request& r) const noexcept {
  const method m = r.method();
  const std::string_view path = r.path();
  // Order: exact over pattern over prefix; then the more specific pattern or the longer
  // prefix; then the request's own method over HEAD falling back to GET; then the first
  // added. "*" (OPTIONS *, the only method the parser lets through with it) names the
  // server, not a resource: only an exact "*" route serves it, else the router answers.
  auto tier = [](const entry& e) { return e.is_prefix ? 0 : e.segments.empty() ? 2 : 1; };
  const entry* best = nullptr;
  bool best_direct = false;
  for (const entry& e : routes_) {
    bool direct = method_matches(e, m);
    if (!direct && !(m == method::head && !e.any_method && e.m == method::get)) continue;
    if (!path_matches(e, path, nullptr)) continue;
    if (best != nullptr) {
      int order = tier(e) - tier(*best);
      if (order == 0 && e.is_prefix)
        order =
            static_cast<int>(e.path.size() > best->path.size()) - static_cast<int>(e.path.size() < best->path.size());
      if (order == 0 && !e.segments.empty()) order = compare_patterns(e, *best);
      if (order == 0) order = static_cast<int>(direct) - static_cast<int>(best_direct);
      if (order <= 0) continue;
    }
    best = &e;
    best_direct = direct;
  }
  return best;
}

task<response> router::operator()(request& r) const {
  const std::string_view path = r.path();
  const bool asterisk = path == "*";
  const entry* best = match(r);
  if (best != nullptr) {
    r.route_rest_ = best->is_prefix ? path.substr(best->path.size()) : std::string_view{};
    r.prefix_routed_ = best->is_prefix;
    r.param_count_ = 0;
    if (!best->segments.empty()) {
      captures raw;
      (void)path_matches(*best, path, &raw);
      // Decoded text is never longer than the path: one buffer of that size holds every
      // capture, and it only grows (then stays) for a path longer than any before.
      if (r.param_text_.size() < path.size()) r.param_text_.resize(path.size());
      char* out = r.param_text_.data();
      std::size_t k = 0;
      for (const segment& s : best->segments) {
        if (s.kind == segment_kind::literal) continue;
        std::size_t n = detail::decode_strict(raw.raw[k], out, raw.raw[k].size());
        r.params_[k] = {std::string_view(best->path).substr(s.pos, s.len), {out, n}};
        out += n;
        ++k;
      }
      r.param_count_ = k;
    }
    return best->h(r);
  }
  if (asterisk) return allow_page(allowed_methods());
  bool path_known = false;
  for (const entry& e : routes_) path_known = path_known || path_matches(e, path, nullptr);
  if (!path_known) return status_page(404, {});
  // The path's methods, in the order their routes were added (HEAD after GET), then
  // OPTIONS, which the router answers for any path it knows.
  std::string allow;
  auto add = [&allow](std::string_view name) {
    if (allow.find(name) == std::string::npos) allow.append(allow.empty() ? "" : ", ").append(name);
  };
  for (const entry& e : routes_) {
    if (e.any_method || !path_matches(e, path, nullptr)) continue;
    add(to_string(e.m));
    if (e.m == method::get) add("HEAD");
  }
  add("OPTIONS");
  if (r.method() == method::options) return allow_page(std::move(allow));
  return status_page(405, std::move(allow));
}

std::string router::allowed_methods() const {
  // Every method some route takes: all of them for an any-method prefix, HEAD with GET,
  // and OPTIONS, answered here. CONNECT never reaches a handler.
  unsigned mask = 1u << static_cast<unsigned>(method::options);
  auto add = [&mask](method m) { mask |= 1u << static_cast<unsigned>(m); };
  for (const entry& e : routes_) {
    if (e.any_method) mask = ~0u;
    add(e.m);
    if (e.m == method::get) add(method::head);
  }
  std::string allow;
  for (unsigned i = 0; i < static_cast<unsigned>(method::unknown); ++i) {
    if ((mask & (1u << i)) == 0 || static_cast<method>(i) == method::connect) continue;
    allow.append(allow.empty() ? "" : ", ").append(to_string(static_cast<method>(i)));
  }
  return allow;
}

}  // namespace ringio::http
