#include "ringio/http/router.hpp"

#include <string>

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

}  // namespace

router& router::route(method m, std::string path, handler h) {
  routes_.push_back({std::move(path), std::move(h), m, false, false});
  return *this;
}

router& router::prefix(std::string path_prefix, handler h) {
  routes_.push_back({std::move(path_prefix), std::move(h), method::get, true, true});
  return *this;
}

router& router::prefix(method m, std::string path_prefix, handler h) {
  routes_.push_back({std::move(path_prefix), std::move(h), m, false, true});
  return *this;
}

bool router::method_matches(const entry& e, method m) const noexcept { return e.any_method || e.m == m; }

const router::entry* router::match(const request& r) const noexcept {
  const method m = r.method();
  const std::string_view path = r.path();
  // Scores: exact path beats prefix, longer prefix beats shorter, the request's own
  // method beats HEAD falling back to GET.
  const entry* best = nullptr;
  std::size_t best_score = 0;
  // "*" (OPTIONS *, the only method the parser lets through with it) names the server,
  // not a resource: only an exact "*" route serves it, else the router answers.
  const bool asterisk = path == "*";
  for (const entry& e : routes_) {
    bool hit = e.is_prefix ? !asterisk && path.starts_with(e.path) : path == e.path;
    if (!hit) continue;
    bool direct = method_matches(e, m);
    if (!direct && !(m == method::head && !e.any_method && e.m == method::get)) continue;
    std::size_t score = (e.is_prefix ? 0 : 1u << 30) + e.path.size() * 2 + (direct ? 1 : 0);
    if (best == nullptr || score > best_score) {
      best = &e;
      best_score = score;
    }
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
    return best->h(r);
  }
  if (asterisk) return allow_page(allowed_methods());
  bool path_known = false;
  for (const entry& e : routes_) path_known = path_known || (e.is_prefix ? path.starts_with(e.path) : path == e.path);
  if (!path_known) return status_page(404, {});
  std::string allow;
  for (const entry& e : routes_) {
    bool hit = e.is_prefix ? path.starts_with(e.path) : path == e.path;
    if (!hit || e.any_method) continue;
    std::string_view name = to_string(e.m);
    if (allow.find(name) == std::string::npos) allow.append(allow.empty() ? "" : ", ").append(name);
    if (e.m == method::get && allow.find("HEAD") == std::string::npos) allow.append(", HEAD");
  }
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
