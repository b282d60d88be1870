// SPDX-License-Identifier: Apache-2.0
// chat_server — a chat room: each line a client sends reaches every other client. The
// room is a broadcast: nobody waits for a slow reader; one that falls more than 256
// messages behind is told how many it missed and goes on from there.
//   chat_server [PORT]      then, in two terminals: nc localhost 7000
#include <ringio/ringio.hpp>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

using namespace ringio;
struct message {
  unsigned from;  // not sent back to its author
  std::shared_ptr<const std::string> text;
};
broadcast<message> room(256);  // one loop thread serves the room: no lock

void say(unsigned from, std::string text) {
  (void)room.send({from, std::make_shared<const std::string>(std::move(text))});
}

// Sends the room's messages to one member until the session ends.
task<void> writer(stream_socket& s, broadcast<message>::receiver inbox, unsigned me) {
  for (;;) {
    auto m = co_await inbox.receive();
    if (!m && m.error() == errc::lagged) {
      std::string notice = "* you missed " + std::to_string(inbox.missed()) + " messages\n";
      auto sent = co_await s.send_all(const_buffer(notice));
      if (!sent) co_return;
      continue;
    }
    if (!m) co_return;  // the session is over
    if (m->from == me) continue;
    auto sent = co_await s.send_all(const_buffer(*m->text));
    if (!sent) co_return;
  }
}

task<void> session(stream_socket s) {
  static unsigned guests = 0;
  const unsigned me = ++guests;
  const std::string name = "guest" + std::to_string(me);
  scope output;
  output.spawn(writer(s, room.subscribe(), me));
  say(me, "* " + name + " joined\n");
  buffered_stream in(s, 1024);
  for (;;) {
    auto line = co_await in.read_line(1000);  // message_too_long, end_of_stream, reset, ...
    if (!line) break;
    say(me, name + ": " + std::string(*line) + "\n");
  }
  say(me, "* " + name + " left\n");
  output.request_stop();
  co_await output.join();
}

int main(int argc, char** argv) {
  char* end = nullptr;
  const unsigned long port = argc > 1 ? std::strtoul(argv[1], &end, 10) : 7000;
  if (argc > 2 || (argc > 1 && (end == argv[1] || *end != '\0' || port > 65535))) {
    std::fprintf(stderr, "usage: chat_server [PORT]\n");
    return 2;
  }
  auto served = serve(socket_address::loopback(static_cast<std::uint16_t>(port)), session,
                      {.on_listening = [](const socket_address& at, runtime&) {
                         std::printf("chat_server: listening on %s\n", at.to_string().c_str());
                         std::fflush(stdout);
                       }});
  if (!served) std::fprintf(stderr, "chat_server: %s\n", served.error().message().c_str());
  return served ? 0 : 1;
}
