// SPDX-License-Identifier: Apache-2.0
// sim_network — the simulated kernel of a sim::world: virtual time, a table of
// simulated TCP sockets (each holding a real placeholder descriptor so numbers stay
// unique in the process), segments in flight with seeded latency, and the faults of
// the world's fault_model. Its syscalls follow libc's convention (-1 and errno) and
// the semantics of non-blocking Linux sockets where a program can observe them.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "ringio/net/socket_address.hpp"
#include "ringio/sim/fault_model.hpp"

namespace ringio::detail {

class sim_network {
 public:
  sim_network(std::uint64_t seed, const sim::fault_model& model);
  ~sim_network();
  sim_network(const sim_network&) = delete;
  sim_network& operator=(const sim_network&) = delete;

  // ---- time and events ----
  [[nodiscard]] std::int64_t now() const noexcept { return now_; }
  [[nodiscard]] const std::int64_t* clock() const noexcept { return &now_; }
  [[nodiscard]] std::int64_t start() const noexcept { return start_; }
  /// Time of the next scheduled event, or 0.
  [[nodiscard]] std::int64_t next_event() const noexcept { return events_.empty() ? 0 : events_.top().at; }
  void advance_to(std::int64_t t) noexcept;
  /// Runs the events due by now(); returns how many ran.
  std::size_t deliver_due();

  // ---- loops attached (a world must outlive them) ----
  std::size_t loops = 0;

  // ---- links ----
  void partition(const socket_address& a, const socket_address& b, bool cut);
  void heal_all();

  // ---- readiness ----
  [[nodiscard]] bool is_virtual(int fd) const noexcept {
    return fd >= 0 && static_cast<std::size_t>(fd) < socks_.size() && socks_[static_cast<std::size_t>(fd)] != nullptr;
  }
  [[nodiscard]] bool readable(int fd) const noexcept;
  [[nodiscard]] bool writable(int fd) const noexcept;
  /// The current host's descriptors whose readiness may have changed since the last call.
  std::vector<int> take_dirty();
  [[nodiscard]] bool has_dirty() const noexcept;

  // ---- hosts (sim::world::add_host): each owns the sockets made in its turns ----
  /// Host `id` (1, 2, ...) has `address`: its wildcard and loopback addresses mean it.
  void add_host(std::uint32_t id, const socket_address& address);
  /// Whose turn it is (0: no host, the world's own thread).
  void set_current_host(std::uint32_t id) noexcept { host_ = id; }

  // ---- syscalls (libc convention) ----
  int socket(int domain, int type, int protocol);
  int bind(int fd, const sockaddr* a, socklen_t len);
  int listen(int fd, int backlog);
  int accept4(int fd, sockaddr* a, socklen_t* len, int flags);
  int connect(int fd, const sockaddr* a, socklen_t len);
  ssize_t recv(int fd, void* buf, std::size_t n, int flags);
  ssize_t send(int fd, const void* buf, std::size_t n, int flags);
  ssize_t sendmsg(int fd, const msghdr* m, int flags);
  ssize_t recvmsg(int fd, msghdr* m, int flags);
  int shutdown(int fd, int how);
  int close(int fd);
  int getsockname(int fd, sockaddr* a, socklen_t* len);
  int getpeername(int fd, sockaddr* a, socklen_t* len);
  int getsockopt(int fd, int level, int name, void* v, socklen_t* len);
  int setsockopt(int fd, int level, int name, const void* v, socklen_t len);

  // ---- the seed ----
  bool chance(double p);
  std::uint64_t below(std::uint64_t n);
  [[nodiscard]] std::uint64_t seed() const noexcept { return seed_; }
  [[nodiscard]] const sim::fault_model& model() const noexcept { return model_; }

  // ---- trace ----
  void note(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
  [[nodiscard]] std::uint64_t trace_hash() const noexcept { return hash_; }
  /// Folds a decision that has no trace line (a host's turn) into the trace's hash.
  void mix(std::uint64_t v) noexcept { hash_ = (hash_ ^ v) * 1099511628211ull; }
  [[nodiscard]] std::string trace(std::size_t lines) const;
  [[nodiscard]] std::size_t open_sockets() const noexcept { return open_; }
  [[nodiscard]] std::uint64_t operations() const noexcept { return operations_; }
  /// The loop found nothing that could ever happen while `stuck` operations waited.
  void note_deadlock(std::size_t stuck);
  /// No host of the world can ever do anything: their waits are failed.
  void note_hosts_deadlock();
  [[nodiscard]] std::uint64_t deadlocks() const noexcept { return deadlocks_; }

 private:
  struct segment {
    enum kind_t : std::uint8_t { data, fin, rst } kind;
    std::string bytes;
  };
  // One end of a connection. Ends outlive their descriptor until both sides closed.
  struct endpoint {
    std::uint64_t id = 0;
    std::uint64_t peer = 0;
    int fd = -1;  // -1: in a backlog, or closed
    socket_address local, remote;
    std::string rx;
    std::size_t rx_off = 0;
    std::deque<segment> transit;  // towards this end, in arrival order
    std::size_t transit_bytes = 0;
    std::size_t rcvbuf = 0;
    std::int64_t out_last = 0;   // arrival time of the last segment this end sent
    std::int64_t link_free = 0;  // when this end's link can send the next byte (bandwidth)
    bool established = false;
    bool fin_in = false, rst_in = false, rst_reported = false;
    int rst_error = 0;  // what a reset reports: ECONNRESET, or EPIPE after the peer's FIN
    bool fin_out = false, rd_shut = false, closed = false;
    [[nodiscard]] std::size_t unread() const noexcept { return rx.size() - rx_off; }
  };
  struct vsock {
    enum class state : std::uint8_t { fresh, listening, connecting, connected, failed };
    state st = state::fresh;
    std::uint64_t id = 0;  // in traces: descriptor numbers depend on the process
    int family = AF_INET;
    bool bound = false;
    socket_address local;
    std::uint64_t ep = 0;
    int backlog = 0;
    std::deque<std::uint64_t> pending;  // established connections not yet accepted
    int so_error = 0;
    bool linger0 = false, nodelay = false, reuse_port = false, v6only = false;
    std::size_t rcvbuf = 0;
    std::uint32_t owner = 0;  // the host whose loop serves it
    // UDP: the peer of connect(), and the datagrams received, not yet read.
    bool dgram = false;
    bool broadcast = false;  // SO_BROADCAST
    bool has_peer = false;
    socket_address peer;
    std::deque<std::pair<socket_address, std::string>> inbox;
    std::size_t inbox_bytes = 0;
  };
  struct event {
    std::int64_t at;
    std::uint64_t seq;
    std::function<void()> fn;
    bool operator>(const event& o) const noexcept { return at != o.at ? at > o.at : seq > o.seq; }
  };

  vsock* sock(int fd) noexcept { return is_virtual(fd) ? socks_[static_cast<std::size_t>(fd)].get() : nullptr; }
  const vsock* sock(int fd) const noexcept {
    return is_virtual(fd) ? socks_[static_cast<std::size_t>(fd)].get() : nullptr;
  }
  endpoint* ep(std::uint64_t id) noexcept;
  const endpoint* ep(std::uint64_t id) const noexcept;
  endpoint& new_endpoint();
  int fail(int err) noexcept;
  int placeholder(int family, int type);
  void at(std::int64_t t, std::function<void()> fn);
  std::int64_t latency();
  std::size_t room_towards(const endpoint& to) const noexcept;
  void transmit(endpoint& from, segment::kind_t kind, std::string bytes);
  void deliver(std::uint64_t to);
  void syn_arrives(std::uint64_t client, socket_address to);
  void refuse(std::uint64_t client);
  void reset_both(endpoint& e);
  void release_if_done(std::uint64_t id);
  void dirty(int fd);
  int listener_for(const socket_address& a) const;
  std::string key_of(const socket_address& a) const;
  bool ensure_bound(vsock& s, int fd);
  bool is_cut(const socket_address& a, const socket_address& b) const;
  int ephemeral_port(const socket_address& near);
  bool address_in_use(const socket_address& a, const vsock* except) const;
  unsigned long long sid(int fd) const noexcept;
  void register_listener(int fd);
  ssize_t transfer_in(int fd, void* buf, std::size_t n, int flags);
  ssize_t datagram_send(int fd, vsock& s, const msghdr& m);
  ssize_t datagram_recv(int fd, vsock& s, msghdr& m, int flags);
  void datagram_arrives(socket_address to, socket_address from, std::string bytes, int sender, std::uint64_t sender_id);
  int datagram_receiver(const socket_address& to) const;
  [[nodiscard]] const socket_address* host_address() const noexcept;
  socket_address on_host(const socket_address& a) const;

  std::uint64_t seed_;
  sim::fault_model model_;
  std::mt19937_64 rng_;
  std::int64_t start_ = 0;
  std::int64_t now_ = 0;
  std::uint64_t seq_ = 0;
  std::priority_queue<event, std::vector<event>, std::greater<>> events_;
  std::vector<std::unique_ptr<vsock>> socks_;
  std::unordered_map<std::uint64_t, endpoint> endpoints_;
  std::uint64_t next_ep_ = 1;
  std::map<std::string, std::vector<int>> listeners_;
  std::set<std::pair<std::string, std::string>> cut_;  // partitioned host pairs (IP bytes, ordered)
  std::vector<std::uint64_t> parked_;  // deliveries waiting for a heal, in order  // several with SO_REUSEPORT
  std::uint16_t next_port_ = 32768;
  std::uint64_t next_sock_ = 1;
  std::uint64_t deadlocks_ = 0;
  std::vector<int> dirty_;
  std::uint32_t host_ = 0;                      // whose turn it is
  std::vector<socket_address> host_addresses_;  // by host id - 1
  std::size_t open_ = 0;
  std::uint64_t operations_ = 0;
  std::uint64_t hash_ = 1469598103934665603ull;
  std::deque<std::string> lines_;
};

}  // namespace ringio::detail
