// SPDX-License-Identifier: Apache-2.0
// chat_server — a chat room: each line a client sends reaches every other client. Each
// member has a batching_writer: lines queue while a send is in flight and go out
// together, so a paste reaches readers in a few large writes. Nobody waits for a slow
// reader: one with 256 lines queued loses the oldest, and is told how many it missed.
//   chat_server [PORT]      then, in two terminals: nc localhost 7000
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <ringio/ringio.hpp>
#include <string>
#include <vector>

using namespace ringio;
using line = std::shared_ptr<const std::string>;  // one copy, shared by every writer
struct member {
  unsigned id;
  batching_writer<line>* out;
};
std::vector<member> room;  // one loop thread serves the room: no lock
unsigned guests = 0;       // members so far, for their names

void say(unsigned from, std::string text) {
  auto l = std::make_shared<const std::string>(std::move(text));
  for (const member& m : room)
    if (m.id != from) (void)m.out->try_write(l);  // never waits: drops the oldest instead
}

line missed(std::uint64_t n) {
  return std::make_shared<const std::string>("* you missed " + std::to_string(n) + " messages\n");
}

// The member's lines, into the room, until it leaves (end_of_stream, reset, too long, ...).
task<result<void>> read_lines(stream_socket& s, unsigned me, const std::string& name) {
  buffered_stream in(s, 1024);
  for (unsigned n = 1;; ++n) {
    auto text = co_await in.read_line(1000);
    if (!text) co_return unexpected(text.error());
    say(me, name + ": " + std::string(*text) + "\n");
    if (n % 32 == 0) co_await yield();  // the writers take these lines before we read more
  }
}

task<void> session(stream_socket s) {
  const unsigned me = ++guests;
  const std::string name = "guest" + std::to_string(me);
  batching_writer<line> out(s, {.max_messages = 256, .when_full = overflow_policy::drop_oldest}, missed);
  room.push_back({me, &out});
  say(me, "* " + name + " joined\n");
  (void)co_await try_when_all(out.run(), read_lines(s, me, name));  // the first to end stops the other
  std::erase_if(room, [me](const member& m) { return m.id == me; });
  say(me, "* " + name + " left\n");
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
