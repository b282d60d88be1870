// SPDX-License-Identifier: Apache-2.0
// raw_epoll_server: the "no framework" epoll peer, a bound on what any
// readiness-based runtime can reach on this machine.
//
// Every thread owns one epoll instance and one nonblocking SO_REUSEPORT
// listener. Connections are registered once, edge-triggered, for both input
// and output; each event drives the connection until it would block. Each
// connection reads into its own fixed buffer, and a write that would block
// stops the reading until EPOLLOUT says the socket drained.
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <latch>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "../common/http.hpp"
#include "../common/peer.hpp"

namespace {

constexpr const char* kProgram = "raw_epoll_server";
// Room for the longest incomplete request plus a read after it.
constexpr std::size_t kHttpInputSize = 2 * peers::http::kMaxRequestBytes;
constexpr int kMaxEvents = 1024;

struct Connection {
  Connection(int socket, std::size_t buffer_size) : fd(socket), input(new char[buffer_size]), capacity(buffer_size) {}
  ~Connection() { close(fd); }

  int fd;
  std::unique_ptr<char[]> input;
  std::size_t capacity;
  std::size_t filled = 0;   // bytes of `input` in use
  std::size_t written = 0;  // echo, pong: bytes of `input` already written back
  bool writing = false;     // echo, pong: `input` is being written back
  std::string output;       // http: responses not written yet, from `written`
  bool close_after_output = false;
};

// Result of one nonblocking read or write.
enum class Io { done, would_block, closed };

Io read_some(Connection& c, char* into, std::size_t size, std::size_t& got) {
  for (;;) {
    const ssize_t n = recv(c.fd, into, size, 0);
    if (n > 0) {
      got = static_cast<std::size_t>(n);
      return Io::done;
    }
    if (n == 0) return Io::closed;
    if (errno == EINTR) continue;
    return errno == EAGAIN ? Io::would_block : Io::closed;
  }
}

// Writes data[0, size) from `offset`, advancing it; done once all is written.
Io write_all(Connection& c, const char* data, std::size_t size, std::size_t& offset) {
  while (offset < size) {
    const ssize_t n = send(c.fd, data + offset, size - offset, MSG_NOSIGNAL);
    if (n >= 0) {
      offset += static_cast<std::size_t>(n);
    } else if (errno == EAGAIN) {
      return Io::would_block;
    } else if (errno != EINTR) {
      return Io::closed;
    }
  }
  return Io::done;
}

// echo: write back each read before reading again.
Io drive_echo(Connection& c) {
  for (;;) {
    if (c.writing) {
      if (Io io = write_all(c, c.input.get(), c.filled, c.written); io != Io::done) return io;
      c.writing = false;
    }
    std::size_t got = 0;
    if (Io io = read_some(c, c.input.get(), c.capacity, got); io != Io::done) return io;
    c.filled = got;
    c.written = 0;
    c.writing = true;
  }
}

// pong: fill the block, then write all of it back.
Io drive_pong(Connection& c) {
  for (;;) {
    if (c.writing) {
      if (Io io = write_all(c, c.input.get(), c.capacity, c.written); io != Io::done) return io;
      c.writing = false;
      c.filled = 0;
    }
    std::size_t got = 0;
    Io io = read_some(c, c.input.get() + c.filled, c.capacity - c.filled, got);
    if (io != Io::done) return io;
    c.filled += got;
    if (c.filled == c.capacity) {
      c.writing = true;
      c.written = 0;
    }
  }
}

// http: answer the complete requests of each read in one write.
Io drive_http(Connection& c) {
  for (;;) {
    if (!c.output.empty()) {
      Io io = write_all(c, c.output.data(), c.output.size(), c.written);
      if (io != Io::done) return io;
      c.output.clear();
      c.written = 0;
    }
    if (c.close_after_output) return Io::closed;
    std::size_t got = 0;
    Io io = read_some(c, c.input.get() + c.filled, c.capacity - c.filled, got);
    if (io != Io::done) return io;
    c.filled += got;
    const peers::http::Answer answer = peers::http::answer_requests({c.input.get(), c.filled}, c.output);
    c.close_after_output = answer.close;
    // Keep the incomplete request at the front for the next read.
    c.filled -= answer.consumed;
    std::memmove(c.input.get(), c.input.get() + answer.consumed, c.filled);
  }
}

class Worker {
 public:
  Worker(const peers::Options& options, int listener) : options_(options), listener_(listener) {}

  [[noreturn]] void run(std::latch& ready) {
    epoll_ = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_ < 0) peers::die(kProgram, "epoll_create1", errno);
    epoll_event event{};
    event.events = EPOLLIN | EPOLLET;
    event.data.ptr = nullptr;  // the listener
    if (epoll_ctl(epoll_, EPOLL_CTL_ADD, listener_, &event) != 0) {
      peers::die(kProgram, "epoll_ctl", errno);
    }
    ready.count_down();
    epoll_event events[kMaxEvents];
    for (;;) {
      const int count = epoll_wait(epoll_, events, kMaxEvents, -1);
      if (count < 0 && errno != EINTR) peers::die(kProgram, "epoll_wait", errno);
      for (int i = 0; i < count; ++i) {
        auto* c = static_cast<Connection*>(events[i].data.ptr);
        if (c == nullptr) {
          accept_all();
        } else if (drive(*c) == Io::closed) {
          delete c;  // closing the fd also removes it from the epoll set
        }
      }
    }
  }

 private:
  void accept_all() {
    for (;;) {
      const int fd = accept4(listener_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        // EINVAL: the listener was shut down, the process is exiting.
        if (errno != EAGAIN && errno != EINVAL && !accept_error_reported_) {
          // Usually EMFILE: keep serving, but say it once.
          std::fprintf(stderr, "%s: accept4: %s\n", kProgram, std::strerror(errno));
          accept_error_reported_ = true;
        }
        return;
      }
      peers::set_nodelay(fd);
      auto* c = new Connection(fd, buffer_size());
      epoll_event event{};
      event.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
      event.data.ptr = c;
      if (epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &event) != 0) delete c;
    }
  }

  std::size_t buffer_size() const {
    switch (options_.mode) {
      case peers::Mode::echo:
        return peers::kReadBufferSize;
      case peers::Mode::pong:
        return options_.block;
      case peers::Mode::http:
        return kHttpInputSize;
    }
    return peers::kReadBufferSize;
  }

  Io drive(Connection& c) const {
    switch (options_.mode) {
      case peers::Mode::echo:
        return drive_echo(c);
      case peers::Mode::pong:
        return drive_pong(c);
      case peers::Mode::http:
        return drive_http(c);
    }
    return Io::closed;
  }

  const peers::Options& options_;
  const int listener_;
  int epoll_ = -1;
  bool accept_error_reported_ = false;
};

}  // namespace

int main(int argc, char** argv) {
  const peers::Options options = peers::parse_options(argc, argv, kProgram);
  peers::prepare_process();
  const std::vector<int> listeners = peers::open_listeners(options, options.threads, /*nonblocking=*/true, kProgram);
  peers::run_until_signal(kProgram, options, listeners,
                          [&](int listener, std::latch& ready) { Worker(options, listener).run(ready); });
}
