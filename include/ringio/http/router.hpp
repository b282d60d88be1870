// SPDX-License-Identifier: Apache-2.0
// ringio/http/router.hpp — dispatch by method and path. Three kinds of route, tried in
// this order of precedence:
//
//  1. exact paths ("/about"): the request's path (percent-encoded, without the query)
//     must equal the route's;
//  2. patterns ("/items/{id}", "/users/{user}/posts/{post}", "/files/{path...}"): a
//     "{name}" segment captures one non-empty path segment, a final "{name...}" segment
//     the rest of the path (slashes included, possibly empty); the captures are
//     percent-decoded into the request (request::param). Among patterns that match,
//     the more specific wins, compared segment by segment from the left: at the first
//     position where they differ, a literal segment beats "{name}", which beats
//     "{name...}"; patterns of the same shape go by the order they were added;
//  3. prefixes ("/static/"): the longest matching prefix wins.
//
// Within one kind, a route for the request's own method beats HEAD falling back to
// GET. HEAD uses the GET route when it has none of its own (the server leaves the
// body out). A path with routes for other methods only gets 405 with an Allow field
// (the path's methods, then OPTIONS); OPTIONS on such a path, with no route of its
// own, gets 200 with that Allow field and no content; no route at all gets 404.
// "OPTIONS *" gets 200 with an Allow field listing every method some route takes
// (unless a route for "*" exists).
//
// A capture whose escapes are malformed ("%zz") or stand for '/' or NUL ("%2F",
// "%00") does not match: the request goes on to the other routes (a prefix, or
// 404/405), so a parameter never holds a '/' the client hid from the router, nor a NUL.
// Lookup and capture allocate nothing once the request's parameter storage has grown
// to the longest path seen.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ringio/http/method.hpp"
#include "ringio/http/request.hpp"
#include "ringio/http/response.hpp"
#include "ringio/task.hpp"

namespace ringio::http {

/// A request handler. It may be called on several loop threads at once.
using handler = std::function<task<response>(request&)>;

/// Routes requests to handlers by method and path (see the top of this file).
class router {
 public:
  /// Routes `path` for method `m`. A path with '{' is a pattern (see above): it must
  /// start with '/', each "{name}" must be a whole segment, names are letters, digits
  /// and '_' and distinct, "{name...}" may only be the last segment, and at most
  /// request::max_route_params captures are allowed; otherwise std::invalid_argument.
  /// Any other path is matched exactly (percent-encoded form, without the query).
  router& route(method m, std::string path, handler h);
  /// route(method::get, ...).
  router& get(std::string path, handler h) { return route(method::get, std::move(path), std::move(h)); }
  /// route(method::head, ...).
  router& head(std::string path, handler h) { return route(method::head, std::move(path), std::move(h)); }
  /// route(method::post, ...).
  router& post(std::string path, handler h) { return route(method::post, std::move(path), std::move(h)); }
  /// route(method::put, ...).
  router& put(std::string path, handler h) { return route(method::put, std::move(path), std::move(h)); }
  /// route(method::patch, ...).
  router& patch(std::string path, handler h) { return route(method::patch, std::move(path), std::move(h)); }
  /// route(method::delete_, ...).
  router& del(std::string path, handler h) { return route(method::delete_, std::move(path), std::move(h)); }

  /// Every path starting with `path_prefix` (literal text, no pattern), any method;
  /// request::route_rest() is the part after the prefix.
  router& prefix(std::string path_prefix, handler h);
  /// Same, for one method (HEAD falls back to GET as above).
  router& prefix(method m, std::string path_prefix, handler h);

  /// Runs the matching handler (or answers 404/405). Reads the routes only, so one
  /// router may serve every loop thread once set up. Cancellation is the handler's.
  task<response> operator()(request& r) const;
  /// Whether a handler of this router takes `r` (false: the router answers 404, 405 or
  /// the OPTIONS * page itself). The server uses it to answer such a request before
  /// reading its body.
  [[nodiscard]] bool has_route(const request& r) const noexcept { return match(r) != nullptr; }

 private:
  enum class segment_kind : std::uint8_t { literal, param, rest };
  // Offsets into entry::path (a view would dangle when the entry's string moves).
  struct segment {
    std::uint32_t pos;
    std::uint32_t len;
    segment_kind kind;
  };
  struct entry {
    std::string path;
    handler h;
    method m;
    bool any_method;
    bool is_prefix;
    std::vector<segment> segments;  // a pattern's; empty for exact and prefix routes
  };
  struct captures {
    std::string_view raw[request::max_route_params];
    std::size_t count = 0;
  };
  [[nodiscard]] bool method_matches(const entry& e, method m) const noexcept;
  [[nodiscard]] static bool path_matches(const entry& e, std::string_view path, captures* out) noexcept;
  [[nodiscard]] static int compare_patterns(const entry& a, const entry& b) noexcept;
  [[nodiscard]] const entry* match(const request& r) const noexcept;
  [[nodiscard]] std::string allowed_methods() const;
  std::vector<entry> routes_;
};

}  // namespace ringio::http
