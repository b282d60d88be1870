// SPDX-License-Identifier: Apache-2.0
// test_routes — the handlers the protocol tests talk to.
#pragma once

#include <stdexcept>
#include <string>

#include "ringio/http/body_writer.hpp"
#include "ringio/http/router.hpp"
#include "ringio/time/sleep.hpp"

namespace ringio_test {

inline ringio::http::router make_test_routes() {
  using ringio::task;
  using ringio::http::request;
  using ringio::http::response;
  ringio::http::router r;
  r.get("/", [](request&) -> task<response> { co_return response::borrowed(200, "Hello world!"); });
  // GET /echo?x answers x; POST /echo answers the body.
  r.get("/echo", [](request& q) -> task<response> { co_return response::text(200, std::string(q.query())); });
  r.post("/echo", [](request& q) -> task<response> { co_return response::text(200, std::string(q.body())); });
  r.get("/stream", [](request&) -> task<response> {
    co_return response::stream(200, "text/plain", [](ringio::http::body_writer& w) -> task<void> {
      for (int i = 0; i < 3; ++i) {
        auto ok = co_await w.write("part" + std::to_string(i) + ";");
        if (!ok) co_return;
      }
      std::string big(40000, 'x');  // larger than the gather limit: sent directly
      auto ok = co_await w.write(big);
      (void)ok;
    });
  });
  r.get("/big", [](request&) -> task<response> { co_return response::text(200, std::string(300 * 1024, 'b')); });
  r.get("/throw", [](request&) -> task<response> {
    throw std::runtime_error("handler failed on purpose");
    co_return response(200);
  });
  // GET /slow?MS answers after MS milliseconds.
  r.get("/slow", [](request& q) -> task<response> {
    auto done = co_await ringio::sleep_for(std::chrono::milliseconds(std::stoi(std::string(q.query()))));
    (void)done;
    co_return response::borrowed(200, "slow");
  });
  return r;
}

}  // namespace ringio_test
