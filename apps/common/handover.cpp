// SPDX-License-Identifier: Apache-2.0
#include "common/handover.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <system_error>
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

}  // namespace

handover::~handover() { close(); }

ringio::result<std::vector<ringio::stream_listener>> handover::take_over() {
  sockaddr_un a;
  if (!unix_address(path_, a)) return ringio::unexpected(ringio::errc::address_too_long);
  int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return ringio::unexpected(ringio::errno_code(-errno));
  if (::connect(s, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    const int e = errno;
    ::close(s);
    // Nobody there: this is the first process (a stale socket file is replaced later).
    if (e == ENOENT || e == ECONNREFUSED) return std::vector<ringio::stream_listener>{};
    return ringio::unexpected(ringio::errno_code(-e));
  }
  auto got = ringio::receive_listeners(s);
  if (!got) {
    ::close(s);
    return ringio::unexpected(got.error());
  }
  predecessor_ = s;
  return got;
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
    if (!told) ringio::log(ringio::log_level::warning, "handover: the previous process did not confirm its drain");
    else ringio::log(ringio::log_level::info, "handover: took over the listening sockets; the previous process drains");
    ::close(predecessor_);
    predecessor_ = -1;
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
      ::listen(listener_, 4) != 0 || ::stat(aside.c_str(), &st) != 0 || ::rename(aside.c_str(), path_.c_str()) != 0) {
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
    ::close(client);
    if (done) {
      handed_over_ = true;
      stop_serving.request_stop();
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
  if (wake_[1] >= 0) {
    (void)!::write(wake_[1], "x", 1);
  }
  if (thread_) {
    thread_->join();
    thread_.reset();
  }
  for (int fd : {wake_[0], wake_[1], listener_, predecessor_})
    if (fd >= 0) ::close(fd);
  wake_[0] = wake_[1] = listener_ = predecessor_ = -1;
  for (int fd : listeners_) ::close(fd);
  listeners_.clear();
  // Remove the path only while it is still ours (a successor renamed its own over it).
  struct stat st {};
  if (inode_ != 0 && !handed_over_ && ::stat(path_.c_str(), &st) == 0 && st.st_ino == inode_) ::unlink(path_.c_str());
  inode_ = 0;
}

}  // namespace apps
