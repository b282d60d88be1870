// chat_server — a chat room: each line a client sends reaches every other client. A
// client 64 messages behind is disconnected instead of holding the room back.
//   chat_server [PORT]      then, in two terminals: nc localhost 7000
#include <ringio/ringio.hpp>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <list>
#include <memory>
#include <string>

using namespace ringio;
using message = std::shared_ptr<const std::string>;
struct member {
  stream_socket& socket;
  std::string name;
  channel<message> outbox{64};
};
std::list<member*> room;  // one loop thread serves the room: no lock

void broadcast(const member& from, std::string text) {
  auto m = std::make_shared<const std::string>(std::move(text));
  for (member* to : room)
    if (to != &from && !to->outbox.try_send(m)) to->socket.cancel();  // too slow: drop it
}

// Sends what is queued for one member, up to 16 messages per gather write.
task<void> writer(member& me) {
  std::array<message, 16> batch;
  std::array<const_buffer, 16> parts;
  for (;;) {
    auto first = co_await me.outbox.receive();
    if (!first) co_return;  // the session is over
    std::size_t n = 0;
    for (auto next = std::optional(std::move(*first)); next && n < batch.size(); next = me.outbox.try_receive()) {
      batch[n] = std::move(*next);
      parts[n] = const_buffer(*batch[n]);
      ++n;
    }
    auto sent = co_await me.socket.send_all(std::span(parts).first(n));
    if (!sent) co_return;
  }
}

task<void> session(stream_socket s) {
  static unsigned guests = 0;
  member me{s, "guest" + std::to_string(++guests)};
  room.push_back(&me);
  scope output;
  output.spawn(writer(me));
  broadcast(me, "* " + me.name + " joined\n");
  buffered_stream in(s, 1024);
  for (;;) {
    auto line = co_await in.read_line(1000);  // message_too_long, end_of_stream, reset, ...
    if (!line) break;
    broadcast(me, me.name + ": " + std::string(*line) + "\n");
  }
  room.remove(&me);
  broadcast(me, "* " + me.name + " left\n");
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
