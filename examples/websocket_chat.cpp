// SPDX-License-Identifier: Apache-2.0
// websocket_chat — the chat room over WebSocket, for browsers: "/" serves a small page,
// "/chat" upgrades to a WebSocket, and every text message a member sends reaches every
// member. The room is a ringio::broadcast of the last 256 lines: nobody waits for a
// slow reader, who is told how many lines it missed.
//   websocket_chat [PORT]      then open http://localhost:8000/ in two browser tabs
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <ringio/http/http.hpp>
#include <ringio/ringio.hpp>
#include <string>

using namespace ringio;
using namespace std::chrono_literals;
using line = std::shared_ptr<const std::string>;  // one copy, shared by every member

broadcast<line> room(256);  // one loop thread serves the room: no lock
unsigned guests = 0;

void say(std::string text) { (void)room.send(std::make_shared<const std::string>(std::move(text))); }

// The room's lines, out to one member.
task<result<void>> forward(http::websocket& ws, broadcast<line>::receiver& inbox) {
  for (;;) {
    auto next = co_await inbox.receive();
    result<void> sent;
    if (next) {
      sent = co_await ws.send_text(**next);
    } else if (next.error() == errc::lagged) {
      sent = co_await ws.send_text("* you missed " + std::to_string(inbox.missed()) + " lines");
    } else {
      co_return unexpected(next.error());
    }
    if (!sent) co_return sent;
  }
}

// One member's messages, into the room, until it leaves.
task<result<void>> listen(http::websocket& ws, const std::string& name) {
  for (;;) {
    auto m = co_await ws.receive();
    if (!m) co_return unexpected(m.error());
    if (m->is_text() && !m->data.empty() && m->data.size() <= 1000) say(name + ": " + std::string(m->data));
  }
}

task<void> member(http::websocket& ws) {
  const std::string name = "guest" + std::to_string(++guests);
  auto inbox = room.subscribe();
  say("* " + name + " joined");
  (void)co_await try_when_all(forward(ws, inbox), listen(ws, name));  // the first to end stops the other
  say("* " + name + " left");
}

constexpr std::string_view page = R"html(<!doctype html>
<meta charset="utf-8"><title>ringio chat</title>
<style>body{font:15px sans-serif;max-width:40em;margin:2em auto}#log{height:20em;overflow:auto;border:1px solid #ccc;padding:.5em;white-space:pre-wrap}input{width:80%}</style>
<div id="log"></div>
<form id="f"><input id="msg" autocomplete="off" autofocus> <button>Send</button></form>
<script>
const log = document.getElementById("log"), msg = document.getElementById("msg");
const ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/chat");
const show = t => { log.textContent += t + "\n"; log.scrollTop = log.scrollHeight; };
ws.onmessage = e => show(e.data);
ws.onclose = e => show("* disconnected (" + e.code + ")");
document.getElementById("f").onsubmit = e => { e.preventDefault(); if (msg.value) ws.send(msg.value); msg.value = ""; };
</script>
)html";

int main(int argc, char** argv) {
  char* end = nullptr;
  const unsigned long port = argc > 1 ? std::strtoul(argv[1], &end, 10) : 8000;
  if (argc > 2 || (argc > 1 && (end == argv[1] || *end != '\0' || port > 65535))) {
    std::fprintf(stderr, "usage: websocket_chat [PORT]\n");
    return 2;
  }
  http::router routes;
  routes.get("/", [](http::request&) -> task<http::response> {
    co_return http::response::borrowed(200, page, "text/html; charset=utf-8");
  });
  routes.get("/chat", [](http::request& r) -> task<http::response> {
    http::websocket_accept_options o;
    o.options.max_message_bytes = 4096;
    o.options.ping_interval = 30s;  // finds members whose network went away
    co_return http::accept_websocket(r, member, o);
  });
  http::server server(routes);
  auto served = serve(socket_address::loopback(static_cast<std::uint16_t>(port)),
                      [&server](stream_socket s) { return server.serve_connection(std::move(s)); },
                      {.on_listening =
                           [](const socket_address& at, runtime&) {
                             std::printf("websocket_chat: listening on http://%s/\n", at.to_string().c_str());
                             std::fflush(stdout);
                           },
                       .on_stop = [&server](int) { server.drain(); }});
  if (!served) {
    std::fprintf(stderr, "websocket_chat: %s\n", served.error().message().c_str());
    return 1;
  }
  return 0;
}
