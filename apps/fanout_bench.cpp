// SPDX-License-Identifier: Apache-2.0
// fanout_bench — a broadcast: one loop sends every message to each of --clients TCP
// connections over 127.0.0.1 through a batching_writer per connection (the chat-room
// workload); a second thread reads every connection to its end. Prints one
// `RESULT {json}` line: messages delivered per second and the sending loop's CPU time
// (user + sys of its thread) per message delivered.
#include <netinet/in.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "ringio/ringio.hpp"

namespace {

const char* const usage =
    "usage: fanout_bench [--clients N] [--messages M] [--size BYTES] [--bundles on|off] [--pin]\n"
    "Sends M messages (default 20,000) of BYTES (default 64) to each of N connections\n"
    "(default 50) with a batching_writer each; --bundles sets io_context_options::\n"
    "send_bundles (default: the library's default). --pin: the sending loop on CPU 0,\n"
    "the reading thread on CPU 1.\n";

// Pins the calling thread to `cpu`.
void pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  ::sched_setaffinity(0, sizeof set, &set);
}

double thread_cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_THREAD, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// Connected TCP pairs over 127.0.0.1, made with plain blocking calls.
bool make_pairs(int n, std::vector<int>& servers, std::vector<int>& clients) {
  int l = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (l < 0 || ::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(l, 4096) != 0 ||
      ::getsockname(l, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    return false;
  for (int i = 0; i < n; ++i) {
    int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c < 0 || ::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return false;
    int s = ::accept4(l, nullptr, nullptr, SOCK_CLOEXEC);
    if (s < 0) return false;
    servers.push_back(s);
    clients.push_back(c);
  }
  ::close(l);
  return true;
}

using message = std::shared_ptr<const std::string>;

ringio::task<void> run_writer(ringio::batching_writer<message>& w, ringio::stream_socket& s) {
  auto r = co_await w.run();
  if (!r) std::fprintf(stderr, "writer: %s\n", r.error().message().c_str());
  ::shutdown(s.native_handle(), SHUT_WR);
}

ringio::task<void> broadcast(std::vector<std::unique_ptr<ringio::batching_writer<message>>>& writers, long messages,
                             std::size_t size) {
  for (long m = 0; m < messages; ++m) {
    auto msg = std::make_shared<const std::string>(size, static_cast<char>('a' + m % 26));
    for (auto& w : writers) {
      auto r = co_await w->write(msg);
      if (!r) co_return;
    }
    if (m % 16 == 15) co_await ringio::yield();
  }
  for (auto& w : writers) w->close();
}

ringio::task<void> drain(ringio::stream_socket& s, long& bytes) {
  std::array<char, 65536> buf;
  for (;;) {
    auto n = co_await s.recv(buf);
    if (!n || *n == 0) co_return;
    bytes += static_cast<long>(*n);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int clients = 50;
  long messages = 20000;
  std::size_t size = 64;
  int bundles = -1;
  bool pin = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--clients" && v != nullptr) clients = std::atoi(argv[++i]);
    else if (a == "--messages" && v != nullptr) messages = std::atol(argv[++i]);
    else if (a == "--size" && v != nullptr) size = static_cast<std::size_t>(std::atol(argv[++i]));
    else if (a == "--pin") pin = true;
    else if (a == "--bundles" && v != nullptr && (std::string_view(v) == "on" || std::string_view(v) == "off"))
      bundles = std::string_view(argv[++i]) == "on" ? 1 : 0;
    else {
      std::fputs(usage, stderr);
      return 2;
    }
  }
  if (clients <= 0 || messages <= 0) {
    std::fputs(usage, stderr);
    return 2;
  }
  std::vector<int> server_fds, client_fds;
  if (!make_pairs(clients, server_fds, client_fds)) {
    std::perror("fanout_bench: loopback connections");
    return 1;
  }
  std::vector<long> received(static_cast<std::size_t>(clients), 0);
  std::thread reader([&] {
    if (pin) pin_to(1);
    ringio::io_context ctx(ringio::io_context_options{.backend = ringio::backend_kind::epoll});
    std::vector<ringio::stream_socket> socks;
    for (int fd : client_fds) socks.emplace_back(ringio::detail::fd_handle(fd));
    ringio::sync_wait(ctx, [](std::vector<ringio::stream_socket>& socks, std::vector<long>& got) -> ringio::task<void> {
      ringio::scope sc;
      for (std::size_t i = 0; i < socks.size(); ++i) sc.spawn(drain(socks[i], got[i]));
      co_await sc.join();
    }(socks, received));
  });
  if (pin) pin_to(0);
  ringio::io_context_options opts;
  if (bundles >= 0) opts.send_bundles = bundles == 1;
  ringio::io_context ctx(opts);
  std::vector<ringio::stream_socket> socks;
  for (int fd : server_fds) socks.emplace_back(ringio::detail::fd_handle(fd));
  std::vector<std::unique_ptr<ringio::batching_writer<message>>> writers;
  for (auto& s : socks) writers.push_back(std::make_unique<ringio::batching_writer<message>>(s));
  const double cpu0 = thread_cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  ringio::sync_wait(ctx,
                    [](std::vector<ringio::stream_socket>& socks,
                       std::vector<std::unique_ptr<ringio::batching_writer<message>>>& writers, long messages,
                       std::size_t size) -> ringio::task<void> {
                      ringio::scope sc;
                      for (std::size_t i = 0; i < socks.size(); ++i) sc.spawn(run_writer(*writers[i], socks[i]));
                      sc.spawn(broadcast(writers, messages, size));
                      co_await sc.join();
                    }(socks, writers, messages, size));
  const double cpu = thread_cpu_seconds() - cpu0;
  reader.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  long bytes = 0;
  for (long b : received) bytes += b;
  const double delivered = static_cast<double>(messages) * clients;
  const bool complete = bytes == static_cast<long>(delivered * static_cast<double>(size));
  const std::string d = ctx.describe();
  const auto at = d.find("send bundles ");
  const std::string mode = at == std::string::npos ? "n/a" : d.substr(at + 13, d.find_first_of(",)", at) - at - 13);
  std::printf(
      "RESULT {\"send_bundles\": \"%s\", \"clients\": %d, \"messages\": %ld, \"size\": %zu, \"complete\": %s, "
      "\"msgs_per_s\": %.0f, \"server_cpu_us_per_msg\": %.4f}\n",
      mode.c_str(), clients, messages, size, complete ? "true" : "false", delivered / secs, cpu * 1e6 / delivered);
  return complete ? 0 : 1;
}
