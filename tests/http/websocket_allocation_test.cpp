// SPDX-License-Identifier: Apache-2.0
// Messages allocate nothing once the buffers have grown: a ringio client and a ringio
// server echoing text and binary messages on one loop,
// with the global operator new replaced by a counting one.
#include <gtest/gtest.h>

#include <string>

#include "ringio/http/client.hpp"
#include "ringio/http/router.hpp"
#include "ringio/http/server.hpp"
#include "ringio/http/websocket_accept.hpp"
#include "ringio/ringio.hpp"
#include "support/counting_new.hpp"
#include "support/loopback.hpp"

namespace {

using namespace ringio;
namespace http = ringio::http;

task<void> echo(http::websocket& ws) {
  for (;;) {
    auto m = co_await ws.receive();
    if (!m) co_return;
    result<void> sent;
    if (m->is_text()) {
      sent = co_await ws.send_text(m->data);
    } else {
      sent = co_await ws.send_binary(m->data);
    }
    if (!sent) co_return;
  }
}

// `rounds` echoes of a short text and a 20 KB binary message; the allocations counted.
task<long> exchange(http::websocket& ws, int rounds, bool count) {
  const std::string text(100, 't');
  const std::string blob(20'000, 'b');
  if (count) {
    ringio_test::allocations = 0;
    ringio_test::counting = true;
  }
  for (int i = 0; i < rounds; ++i) {
    auto a = co_await ws.send_text(text);
    auto b = co_await ws.receive();  // its data is valid until the next receive
    const bool text_ok = a && b && b->data == text;
    auto c = co_await ws.send_binary(blob);
    auto d = co_await ws.receive();
    if (!text_ok || !c || !d || d->data != blob) {
      ringio_test::counting = false;
      ADD_FAILURE() << "echo failed in round " << i;
      co_return -1;
    }
  }
  ringio_test::counting = false;
  co_return ringio_test::allocations.load();
}

// Echoes over a ringio server and client with `deflate` on both sides; the allocations
// over 1000 messages once the buffers have grown.
long echo_allocations(const http::websocket_deflate_options& deflate) {
  http::websocket_accept_options accept;
  accept.options.deflate = deflate;
  http::router routes;
  routes.get("/ws", [&accept](http::request& r) -> task<http::response> {
    co_return http::accept_websocket(r, echo, accept);
  });
  http::server server(routes);
  auto listener = ringio_test::listen_loopback();
  const std::string url = "ws://127.0.0.1:" + std::to_string(ringio_test::address_of(listener).port()) + "/ws";
  io_context ctx(io_context_options{.quiet = true});
  long counted = -1;
  sync_wait(ctx, [&]() -> task<void> {
    std::stop_source stop;
    scope serving;
    serving.spawn(server.serve(listener, stop.get_token()));
    {
      http::client client;
      http::websocket_connect_options o;
      o.options.deflate = deflate;
      auto ws = co_await client.connect_websocket(url, o);
      if (!ws) {
        ADD_FAILURE() << ws.error().message();
      } else {
        EXPECT_EQ(ws->compressed(), deflate.enabled);
        (void)co_await exchange(*ws, 50, false);  // the buffers grow
        counted = co_await exchange(*ws, 500, true);
        (void)co_await ws->close();
      }
    }
    stop.request_stop();
    co_await serving.join();
  }());
  return counted;
}

}  // namespace

TEST(WebSocketAllocation, EchoedMessagesAllocateNothing) {
#if defined(RINGIO_SANITIZED)
  GTEST_SKIP() << "sanitizer builds bypass the coroutine frame cache: each task allocates its frame";
#endif
  EXPECT_EQ(echo_allocations({}), 0) << "allocations over 1000 echoed messages";
}

// permessage-deflate: the zlib streams are made once per connection, the compressed
// and inflated buffers kept; with and without context takeover.
TEST(WebSocketAllocation, CompressedMessagesAllocateNothing) {
#if defined(RINGIO_SANITIZED)
  GTEST_SKIP() << "sanitizer builds bypass the coroutine frame cache: each task allocates its frame";
#endif
  for (bool no_context : {false, true}) {
    SCOPED_TRACE(no_context ? "no context takeover" : "context takeover");
    http::websocket_deflate_options d;
    d.enabled = true;
    d.no_context_takeover = no_context;
    d.peer_no_context_takeover = no_context;
    EXPECT_EQ(echo_allocations(d), 0) << "allocations over 1000 echoed compressed messages";
  }
}
