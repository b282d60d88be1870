// SPDX-License-Identifier: Apache-2.0
#include "common/handover.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <system_error>
#include <thread>
#include <vector>

#include "ringio/log.hpp"
#include "ringio/net/listener_handover.hpp"

namespace apps {
namespace {

using namespace std::chrono_literals;

constexpr char ready_byte = 'R';     // new -> old: accepting on the sockets now
constexpr char draining_byte = 'D';  // old -> new: stopped accepting
// How long the old process waits for "ready" (peers are answered one at a time): well
// within the new process's wait for the sockets, so that one silent peer cannot make a
// real successor give up.
constexpr auto ready_wait = 4s;
constexpr auto draining_wait = 10s;  // how long the new one waits for "draining"
constexpr auto queue_watch = 3s;     // after a takeover: how long queued connections are watched
constexpr auto queue_check = 100ms;  // how often
// A successor waits this long for the sockets, in all (retries included).
constexpr auto sockets_wait = 10s;
// How often a process that has handed over checks whether its successor owns the
// path, and for how long at most (the successor renames it as soon as it is told).
constexpr auto path_check = 20ms;
constexpr auto refer_wait = 10s;
// A predecessor that closed without confirming: dying, or refusing and serving on.
constexpr auto exit_grace = 1s;

std::string errno_text() { return std::error_code(errno, std::system_category()).message(); }

bool unix_address(const std::string& path, sockaddr_un& a) {
  std::memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof a.sun_path) return false;
  std::memcpy(a.sun_path, path.data(), path.size());
  return true;
}

// One byte, up to `timeout` (or until `wake` is readable): the byte, or 0 on EOF,
// error, timeout or wake-up.
char read_byte(int fd, std::chrono::milliseconds timeout, int wake = -1) {
  pollfd p[2] = {{fd, POLLIN, 0}, {wake, POLLIN, 0}};
  if (::poll(p, wake >= 0 ? 2 : 1, static_cast<int>(timeout.count())) <= 0 || p[1].revents != 0) return 0;
  char c = 0;
  return ::recv(fd, &c, 1, 0) == 1 ? c : 0;
}

bool write_byte(int fd, char c) { return ::send(fd, &c, 1, MSG_NOSIGNAL) == 1; }

// A descriptor that becomes readable when the process at the other end of the Unix
// connection `fd` exits (-1 when the kernel cannot say).
int peer_pidfd(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.pid <= 0) return -1;
  return static_cast<int>(::syscall(SYS_pidfd_open, cred.pid, 0));
}

unsigned long long path_inode(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

// Whether the process behind `pidfd` exits within `grace`.
bool process_exits(int pidfd, std::chrono::milliseconds grace) {
  if (pidfd < 0) return false;
  pollfd p{pidfd, POLLIN, 0};
  return ::poll(&p, 1, static_cast<int>(grace.count())) == 1;
}

// The peer closed the connection before a word: a process that has handed over to
// another successor already, which owns the path in a moment.
bool closed_before_a_word(const std::error_code& e) {
  return e == ringio::errc::end_of_stream || e == std::errc::connection_reset;
}

}  // namespace

handover::~handover() { stop(); }

ringio::result<std::vector<ringio::stream_listener>> handover::take_over() {
  using clock = std::chrono::steady_clock;
  sockaddr_un a;
  if (!unix_address(path_, a)) return ringio::unexpected(ringio::errc::address_too_long);
  const auto deadline = clock::now() + sockets_wait;
  for (;;) {
    int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) return ringio::unexpected(ringio::errno_code(-errno));
    const auto before = path_inode(path_);
    if (::connect(s, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
      const int e = errno;
      ::close(s);
      // Refused while the path changed hands (a process that handed over stops
      // listening once its successor owns the path): ask the new owner.
      if (e == ECONNREFUSED && path_inode(path_) != before && clock::now() < deadline) continue;
      // Nobody there: this is the first process (a stale socket file is replaced later).
      if (e == ENOENT || e == ECONNREFUSED) return std::vector<ringio::stream_listener>{};
      return ringio::unexpected(ringio::errno_code(-e));
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
    auto got = ringio::receive_listeners(s, std::max(left, std::chrono::milliseconds(1)));
    if (got) {
      predecessor_ = s;
      predecessor_exit_ = peer_pidfd(s);
      return got;
    }
    ::close(s);
    // Another successor was faster: ask again, now or in a moment the newest process.
    if (!closed_before_a_word(got.error()) || clock::now() >= deadline) return ringio::unexpected(got.error());
    std::this_thread::sleep_for(path_check);
  }
}

void handover::keep(const std::vector<int>& listeners) {
  for (int fd : listeners) {
    int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (copy >= 0) listeners_.push_back(copy);
  }
}

bool handover::serve_successors(std::stop_source stop_serving) {
  if (predecessor_ >= 0) {
    // We accept on the same sockets now: the old process may stop.
    const bool told = write_byte(predecessor_, ready_byte) && read_byte(predecessor_, draining_wait) == draining_byte;
    ::close(predecessor_);
    predecessor_ = -1;
    if (!told && !process_exits(predecessor_exit_, exit_grace)) {
      // It gave up waiting for us and serves on, and keeps the path: two processes
      // cannot both own it, so this one stops (what it accepted meanwhile is served).
      ringio::log(ringio::log_level::error,
                  "handover: the running process did not accept the handover (it serves on); stopping");
      return false;
    }
    if (!told) ringio::log(ringio::log_level::warning, "handover: the previous process exited before confirming");
    else ringio::log(ringio::log_level::info, "handover: took over the listening sockets; the previous process drains");
    took_over_ = true;
  }
  // Our socket is made aside and renamed over the path: a successor always finds one
  // process there (the old one until the rename, then us).
  const std::string aside = path_ + ".new." + std::to_string(::getpid());
  sockaddr_un a;
  if (!unix_address(aside, a)) {
    ringio::log(ringio::log_level::error, "handover: socket path too long: %s", aside.c_str());
    return false;
  }
  ::unlink(aside.c_str());
  listener_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct stat st {};
  if (listener_ < 0 || ::bind(listener_, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(listener_, 64) != 0 || ::stat(aside.c_str(), &st) != 0 || ::rename(aside.c_str(), path_.c_str()) != 0) {
    ringio::log(ringio::log_level::error, "handover: cannot listen on %s: %s", path_.c_str(), errno_text().c_str());
    ::unlink(aside.c_str());
    return false;
  }
  inode_ = st.st_ino;
  if (::pipe2(wake_, O_CLOEXEC) != 0) {
    ringio::log(ringio::log_level::error, "handover: pipe: %s", errno_text().c_str());
    return false;
  }
  thread_.emplace([this, stop_serving]() mutable { run(std::move(stop_serving)); });
  return true;
}

namespace {

// A listening socket with a connection waiting (no waiter is registered: timeout 0).
bool has_pending_connection(int listener) {
  pollfd p{listener, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0;
}

// Makes the kernel wake an accept waiter on `listener`: one connection to its own
// address, closed at once (the server sees it end without a request). A waiter woken
// by it accepts every connection in the queue.
void wake_acceptors(int listener) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len) != 0) return;
  int s = ::socket(a.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s < 0) return;
  (void)::connect(s, reinterpret_cast<const sockaddr*>(&a), len);  // (EINPROGRESS: queued all the same)
  ::close(s);
}

}  // namespace

void handover::run(std::stop_source stop_serving) {
  using clock = std::chrono::steady_clock;
  // After taking over, the predecessor's accept requests end; one the kernel had woken
  // for a connection (accept waiters on a listener are woken one per connection) and
  // that was cancelled before it accepted leaves the connection in the queue with
  // nobody woken for it. For a while, a connection that stays queued wakes ours.
  const auto watch_until = took_over_ ? clock::now() + queue_watch : clock::time_point{};
  std::vector<bool> seen_pending(listeners_.size(), false);
  for (;;) {
    const bool watching = clock::now() < watch_until;
    pollfd p[2] = {{listener_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    const int n = ::poll(p, 2, watching ? static_cast<int>(queue_check.count()) : -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (p[1].revents != 0) return;  // close()
    if (watching) {
      for (std::size_t i = 0; i < listeners_.size(); ++i) {
        const bool pending = has_pending_connection(listeners_[i]);
        if (pending && seen_pending[i]) {
          ringio::log(ringio::log_level::info, "handover: a connection stayed in the accept queue; waking the accept");
          wake_acceptors(listeners_[i]);
        }
        seen_pending[i] = pending;
      }
    }
    if ((p[0].revents & POLLIN) == 0) continue;
    int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    const bool done = answer(client);
    if (done) successor_exit_ = peer_pidfd(client);
    ::close(client);
    if (done) {
      handed_over_ = true;
      stop_serving.request_stop();
      refer_to_successor();
      return;
    }
  }
}

// Until the successor has renamed its socket over the path, a process that connects
// here would otherwise find nobody listening and believe it is the first: answer each
// with a close (it asks again), then stop listening once the path is the successor's,
// or the successor has died, or after refer_wait. The process does not exit before.
void handover::refer_to_successor() {
  const auto until = std::chrono::steady_clock::now() + refer_wait;
  while (std::chrono::steady_clock::now() < until) {
    pollfd p[2] = {{listener_, POLLIN, 0}, {successor_exit_, POLLIN, 0}};
    const int n = ::poll(p, 2, static_cast<int>(path_check.count()));
    if (n < 0 && errno != EINTR) return;
    if (p[1].revents != 0) return;  // the successor died: the path is stale
    if ((p[0].revents & POLLIN) != 0) {
      int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client >= 0) ::close(client);
      continue;
    }
    struct stat st {};
    if (::stat(path_.c_str(), &st) != 0 || st.st_ino != inode_) {
      // Queued peers see a reset and ask again, at the successor's socket.
      ::close(listener_);
      listener_ = -1;
      return;
    }
  }
}

// Gives a successor the sockets; true once it accepts on them (we then stop).
bool handover::answer(int client) {
  auto sent = ringio::send_listeners(client, listeners_);
  if (!sent) {
    ringio::log(ringio::log_level::warning, "handover: sending the listening sockets failed: %s",
                sent.error().message().c_str());
    return false;
  }
  if (read_byte(client, ready_wait, wake_[0]) != ready_byte) {
    ringio::log(ringio::log_level::warning, "handover: the new process did not start; serving on");
    return false;
  }
  ringio::log(ringio::log_level::info, "handover: a new process accepts on the listening sockets; draining");
  (void)write_byte(client, draining_byte);  // (sent before we stop: it only confirms)
  return true;
}

void handover::close() {
  if (handed_over_) {
    // The thread refers late successors until the path is not ours (or the destructor).
    for (int fd : listeners_) ::close(fd);
    listeners_.clear();
    return;
  }
  stop();
}

void handover::stop() {
  // A thread that referred late successors ends by itself, soon (refer_to_successor).
  if (wake_[1] >= 0 && !handed_over_) {
    (void)!::write(wake_[1], "x", 1);
  }
  if (thread_) {
    thread_->join();
    thread_.reset();
  }
  for (int fd : {wake_[0], wake_[1], listener_, predecessor_, predecessor_exit_, successor_exit_})
    if (fd >= 0) ::close(fd);
  wake_[0] = wake_[1] = listener_ = predecessor_ = predecessor_exit_ = successor_exit_ = -1;
  for (int fd : listeners_) ::close(fd);
  listeners_.clear();
  // Remove the path only while it is still ours (a successor renamed its own over it).
  struct stat st {};
  if (inode_ != 0 && !handed_over_ && ::stat(path_.c_str(), &st) == 0 && st.st_ino == inode_) ::unlink(path_.c_str());
  inode_ = 0;
}

}  // namespace apps
