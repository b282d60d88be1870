// SPDX-License-Identifier: Apache-2.0
// http_app — a small HTTP API on ringio::http: a path parameter answered in JSON, a
// query string, a streamed body and static files. Stops gracefully on SIGINT/SIGTERM.
//   http_app [PORT] [STATIC_DIR]      then: curl localhost:8080/items/42
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ringio/http/http.hpp>
#include <ringio/ringio.hpp>
#include <string>

using namespace ringio;
using namespace std::chrono_literals;

task<http::response> item(http::request& req) {  // GET /items/{id}
  http::json_writer j;
  j.begin_object().key("id").value(req.param("id")).key("method").value(req.method_name()).end_object();
  co_return http::response::json(200, j.take());
}

task<http::response> search(http::request& req) {  // GET /search?q=...&limit=...
  http::query_params query(req.query());
  auto q = query.find("q");
  if (!q) co_return http::response::text(400, "missing q\n");
  http::json_writer j;
  j.begin_object().key("query").value(*q).key("limit").value(query.find("limit").value_or("10"));
  co_return http::response::json(200, j.end_object().take());
}

task<http::response> countdown(http::request&) {  // GET /countdown: one line per 200 ms
  co_return http::response::stream(200, "text/plain", [](http::body_writer& w) -> task<void> {
    for (int i = 3; i > 0; --i) {
      auto sent = co_await w.write(std::to_string(i) + "...\n");  // reaches the client now
      if (!sent) co_return;                                       // the client went away
      auto slept = co_await sleep_for(200ms);
      if (!slept) co_return;  // the server is stopping
    }
    (void)co_await w.write("liftoff\n");
  });
}

int main(int argc, char** argv) {
  char* end = nullptr;
  const unsigned long port = argc > 1 ? std::strtoul(argv[1], &end, 10) : 8080;
  if (argc > 3 || (argc > 1 && (end == argv[1] || *end != '\0' || port > 65535))) {
    std::fprintf(stderr, "usage: http_app [PORT] [STATIC_DIR]\n");
    return 2;
  }
  const std::string root = argc > 2 ? argv[2] : ".";

  http::router routes;
  routes.get("/items/{id}", item);
  routes.get("/search", search);
  routes.get("/countdown", countdown);
  routes.prefix(http::method::get, "/static/", http::static_files(root));
  http::server server(routes, {.idle_timeout = 30s});

  auto served = serve(socket_address::loopback(static_cast<std::uint16_t>(port)),
                      [&server](stream_socket s) { return server.serve_connection(std::move(s)); },
                      {.on_listening =
                           [](const socket_address& at, runtime&) {
                             std::printf("http_app: listening on %s\n", at.to_string().c_str());
                             std::fflush(stdout);
                           },
                       .on_stop = [&server](int) { server.drain(); }});
  if (!served) {
    std::fprintf(stderr, "http_app: %s\n", served.error().message().c_str());
    return 1;
  }
  return 0;
}
