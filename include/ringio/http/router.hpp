// ringio/http/router.hpp — dispatch by method and path: exact paths first, then the
// longest matching prefix. HEAD uses the GET route when it has none of its own (the
// server leaves the body out). A path with routes for other methods only gets 405
// with an Allow field; no route at all gets 404. "OPTIONS *" gets 200 with an Allow
// field listing every method some route takes (unless a route for "*" exists).
// Lookup allocates nothing.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ringio/http/method.hpp"
#include "ringio/http/request.hpp"
#include "ringio/http/response.hpp"
#include "ringio/task.hpp"

namespace ringio::http {

/// A request handler. It may be called on several loop threads at once.
using handler = std::function<task<response>(request&)>;

class router {
 public:
  /// `path` must equal the request's path (percent-encoded form, without the query).
  router& route(method m, std::string path, handler h);
  router& get(std::string path, handler h) { return route(method::get, std::move(path), std::move(h)); }
  router& head(std::string path, handler h) { return route(method::head, std::move(path), std::move(h)); }
  router& post(std::string path, handler h) { return route(method::post, std::move(path), std::move(h)); }
  router& put(std::string path, handler h) { return route(method::put, std::move(path), std::move(h)); }
  router& patch(std::string path, handler h) { return route(method::patch, std::move(path), std::move(h)); }
  router& del(std::string path, handler h) { return route(method::delete_, std::move(path), std::move(h)); }

  /// Every path starting with `path_prefix`, any method; request::route_rest() is the
  /// part after the prefix.
  router& prefix(std::string path_prefix, handler h);
  /// Same, for one method (HEAD falls back to GET as above).
  router& prefix(method m, std::string path_prefix, handler h);

  /// Runs the matching handler (or answers 404/405). Reads the routes only, so one
  /// router may serve every loop thread once set up.
  task<response> operator()(request& r) const;
  /// Whether a handler of this router takes `r` (false: the router answers 404, 405 or
  /// the OPTIONS * page itself). The server uses it to answer such a request before
  /// reading its body.
  [[nodiscard]] bool has_route(const request& r) const noexcept { return match(r) != nullptr; }

 private:
  struct entry {
    std::string path;
    handler h;
    method m;
    bool any_method;
    bool is_prefix;
  };
  [[nodiscard]] bool method_matches(const entry& e, method m) const noexcept;
  [[nodiscard]] const entry* match(const request& r) const noexcept;
  [[nodiscard]] std::string allowed_methods() const;
  std::vector<entry> routes_;
};

}  // namespace ringio::http
