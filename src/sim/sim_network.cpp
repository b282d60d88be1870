// SPDX-License-Identifier: Apache-2.0
#include "sim/sim_network.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include "ringio/detail/clock.hpp"

namespace ringio::detail {

namespace {

constexpr std::size_t trace_keep = 2000;
constexpr std::int64_t syn_retry_ns = 1'000'000'000;  // a dropped SYN is sent again after 1 s

socket_address address_from(const sockaddr* a, socklen_t len) { return socket_address::from_native(a, len); }

int copy_address(const socket_address& from, sockaddr* a, socklen_t* len) {
  if (a == nullptr || len == nullptr) return 0;
  socklen_t n = std::min(*len, from.size());
  std::memcpy(a, from.native(), n);
  *len = from.size();
  return 0;
}

bool is_wildcard(const socket_address& a) {
  if (a.is_ipv4()) return reinterpret_cast<const sockaddr_in*>(a.native())->sin_addr.s_addr == htonl(INADDR_ANY);
  if (a.is_ipv6()) return IN6_IS_ADDR_UNSPECIFIED(&reinterpret_cast<const sockaddr_in6*>(a.native())->sin6_addr);
  return false;
}

bool is_loopback(const socket_address& a) {
  if (a.is_ipv4()) return (ntohl(reinterpret_cast<const sockaddr_in*>(a.native())->sin_addr.s_addr) >> 24) == 127;
  if (a.is_ipv6()) return IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(a.native())->sin6_addr);
  return false;
}

// An IPv4 address as IPv6 sees it on a dual-stack socket (::ffff:a.b.c.d).
socket_address v4_mapped(const socket_address& a) {
  if (!a.is_ipv4()) return a;
  sockaddr_in6 six{};
  six.sin6_family = AF_INET6;
  six.sin6_port = reinterpret_cast<const sockaddr_in*>(a.native())->sin_port;
  six.sin6_addr.s6_addr[10] = six.sin6_addr.s6_addr[11] = 0xff;
  std::memcpy(&six.sin6_addr.s6_addr[12], &reinterpret_cast<const sockaddr_in*>(a.native())->sin_addr, 4);
  return socket_address::from_native(reinterpret_cast<const sockaddr*>(&six), sizeof six);
}

// The host part of an address (its IP bytes), with IPv4-mapped IPv6 as IPv4.
std::string host_of(const socket_address& a) {
  if (a.is_ipv4())
    return std::string(reinterpret_cast<const char*>(&reinterpret_cast<const sockaddr_in*>(a.native())->sin_addr), 4);
  if (a.is_ipv6()) {
    const auto* six = &reinterpret_cast<const sockaddr_in6*>(a.native())->sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(six)) return std::string(reinterpret_cast<const char*>(six) + 12, 4);
    return std::string(reinterpret_cast<const char*>(six), 16);
  }
  return {};
}

}  // namespace

sim_network::sim_network(std::uint64_t seed, const sim::fault_model& model) : seed_(seed), model_(model), rng_(seed) {
  // Virtual time begins at the real time of creation, so deadlines a program computes
  // from std::chrono::steady_clock before anything jumps stay meaningful.
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  start_ = now_ = static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  if (model_.max_latency < model_.min_latency) model_.max_latency = model_.min_latency;
  if (model_.buffer_bytes == 0) model_.buffer_bytes = 1;  // a connection must be able to move a byte
  if (model_.max_backlog < 0) model_.max_backlog = 0;
}

unsigned long long sim_network::sid(int fd) const noexcept {
  const vsock* s = sock(fd);
  return s == nullptr ? 0ull : static_cast<unsigned long long>(s->id);
}

void sim_network::note_deadlock(std::size_t stuck) {
  ++deadlocks_;
  note("deadlock: nothing can happen; %zu operations fail with operation_canceled", stuck);
}

void sim_network::note_hosts_deadlock() {
  ++deadlocks_;
  note("deadlock: no host can ever do anything; what they wait for fails with operation_canceled");
}

// Placeholders still open belong to their sockets: a socket that outlives the world
// closes its own (by then a plain close(2) of the placeholder).
sim_network::~sim_network() = default;

// ---- seed, trace ----

bool sim_network::chance(double p) {
  if (p <= 0) return false;
  return static_cast<double>(rng_() >> 11) * 0x1.0p-53 < p;
}

std::uint64_t sim_network::below(std::uint64_t n) { return n == 0 ? 0 : rng_() % n; }

void sim_network::note(const char* fmt, ...) {
  char line[256];
  int n = std::snprintf(line, sizeof line, "%10.6f ", static_cast<double>(now_ - start_) / 1e9);
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(line + n, sizeof line - static_cast<std::size_t>(n), fmt, ap);
  va_end(ap);
  for (const char* p = line; *p != '\0'; ++p) hash_ = (hash_ ^ static_cast<unsigned char>(*p)) * 1099511628211ull;
  hash_ = (hash_ ^ '\n') * 1099511628211ull;
  lines_.emplace_back(line);
  if (lines_.size() > trace_keep) lines_.pop_front();
}

std::string sim_network::trace(std::size_t lines) const {
  std::string out;
  std::size_t first = lines_.size() > lines ? lines_.size() - lines : 0;
  for (std::size_t i = first; i < lines_.size(); ++i) (out += lines_[i]) += '\n';
  return out;
}

// ---- time and events ----

void sim_network::advance_to(std::int64_t t) noexcept {
  if (t > now_) now_ = t;
}

void sim_network::at(std::int64_t t, std::function<void()> fn) { events_.push(event{t, seq_++, std::move(fn)}); }

std::size_t sim_network::deliver_due() {
  std::size_t n = 0;
  while (!events_.empty() && events_.top().at <= now_) {
    auto fn = std::move(const_cast<event&>(events_.top()).fn);
    events_.pop();
    fn();
    ++n;
  }
  return n;
}

std::int64_t sim_network::latency() {
  auto lo = model_.min_latency.count(), hi = model_.max_latency.count();
  return lo + static_cast<std::int64_t>(below(static_cast<std::uint64_t>(hi - lo) + 1));
}

void sim_network::dirty(int fd) {
  if (fd >= 0) dirty_.push_back(fd);
}

bool sim_network::has_dirty() const noexcept {
  if (host_addresses_.empty()) return !dirty_.empty();
  return std::any_of(dirty_.begin(), dirty_.end(), [&](int fd) {
    const vsock* s = sock(fd);
    return s == nullptr || s->owner == host_;
  });
}

std::vector<int> sim_network::take_dirty() {
  std::vector<int> out;
  if (host_addresses_.empty()) {
    out.swap(dirty_);
  } else {  // the current host's (closed ones too); the others' stay for their turns
    auto theirs = std::stable_partition(dirty_.begin(), dirty_.end(), [&](int fd) {
      const vsock* s = sock(fd);
      return s != nullptr && s->owner != host_;
    });
    out.assign(theirs, dirty_.end());
    dirty_.erase(theirs, dirty_.end());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  if (model_.shuffle_ready)
    for (std::size_t i = out.size(); i > 1; --i) std::swap(out[i - 1], out[below(i)]);
  return out;
}

// ---- endpoints ----

sim_network::endpoint* sim_network::ep(std::uint64_t id) noexcept {
  auto it = endpoints_.find(id);
  return it == endpoints_.end() ? nullptr : &it->second;
}

const sim_network::endpoint* sim_network::ep(std::uint64_t id) const noexcept {
  auto it = endpoints_.find(id);
  return it == endpoints_.end() ? nullptr : &it->second;
}

sim_network::endpoint& sim_network::new_endpoint() {
  std::uint64_t id = next_ep_++;
  endpoint& e = endpoints_[id];
  e.id = id;
  e.rcvbuf = model_.buffer_bytes;
  return e;
}

// Space the receiver `to` has for more bytes in flight towards it.
std::size_t sim_network::room_towards(const endpoint& to) const noexcept {
  std::size_t used = to.unread() + to.transit_bytes;
  return used >= to.rcvbuf ? 0 : to.rcvbuf - used;
}

// Sends one segment from `from` to its peer: it arrives after a seeded latency, never
// before an earlier segment of the same direction (TCP keeps order).
void sim_network::transmit(endpoint& from, segment::kind_t kind, std::string bytes) {
  std::int64_t depart = now_;
  if (model_.bandwidth_bytes_per_second != 0 && !bytes.empty()) {
    depart = std::max(now_, from.link_free) +
             static_cast<std::int64_t>(bytes.size() * 1'000'000'000ull / model_.bandwidth_bytes_per_second);
    from.link_free = depart;
  }
  std::int64_t arrival = std::max(depart + latency(), from.out_last);
  from.out_last = arrival;
  endpoint* to = ep(from.peer);
  if (to == nullptr || to->closed) {
    // Nobody is there any more: data or a FIN to a closed end is answered by a reset.
    if (kind == segment::rst) return;
    std::uint64_t back = from.id;
    at(arrival + latency(), [this, back] {
      endpoint* e = ep(back);
      if (e == nullptr || e->closed || e->rst_in) return;
      segment s{segment::rst, {}};
      e->transit.push_back(std::move(s));
      deliver(back);
    });
    return;
  }
  to->transit_bytes += bytes.size();
  to->transit.push_back(segment{kind, std::move(bytes)});
  std::uint64_t id = to->id;
  if (is_cut(from.local, from.remote)) {
    parked_.push_back(id);  // delivered after the heal (TCP would retransmit it)
    return;
  }
  at(arrival, [this, id] { deliver(id); });
}

bool sim_network::is_cut(const socket_address& a, const socket_address& b) const {
  if (cut_.empty()) return false;
  std::string x = host_of(a), y = host_of(b);
  if (y < x) std::swap(x, y);
  return cut_.count({x, y}) != 0;
}

void sim_network::partition(const socket_address& a, const socket_address& b, bool cut) {
  std::string x = host_of(a), y = host_of(b);
  if (y < x) std::swap(x, y);
  note("%s %s - %s", cut ? "partition" : "heal", a.to_string().c_str(), b.to_string().c_str());
  if (cut) {
    cut_.insert({x, y});
    return;
  }
  cut_.erase({x, y});
  // What waited on links that are whole again leaves now, in the order it was sent
  // (a delivery takes the oldest segment of its end).
  std::vector<std::uint64_t> still;
  std::int64_t t = now_;
  for (std::uint64_t id : parked_) {
    endpoint* e = ep(id);
    if (e == nullptr) continue;
    if (is_cut(e->local, e->remote)) {
      still.push_back(id);
      continue;
    }
    t = std::max(t, now_ + latency());
    at(t, [this, id] { deliver(id); });
  }
  parked_.swap(still);
}

void sim_network::heal_all() {
  note("heal all");
  cut_.clear();
  std::vector<std::uint64_t> waiting;
  waiting.swap(parked_);
  std::int64_t t = now_;
  for (std::uint64_t id : waiting) {
    t = std::max(t, now_ + latency());
    at(t, [this, id] { deliver(id); });
  }
}

void sim_network::deliver(std::uint64_t to) {
  endpoint* e = ep(to);
  if (e == nullptr || e->transit.empty()) return;
  segment s = std::move(e->transit.front());
  e->transit.pop_front();
  e->transit_bytes -= s.bytes.size();
  if (e->closed) {
    // Data for a closed end: the sender hears a reset (what Linux answers).
    if (s.kind == segment::data) {
      endpoint* from = ep(e->peer);
      if (from != nullptr && !from->closed && !from->rst_in) transmit(*e, segment::rst, {});
    }
    release_if_done(to);
    return;
  }
  switch (s.kind) {
    case segment::data:
      note("deliver c%llu %zu bytes", static_cast<unsigned long long>(e->id), s.bytes.size());
      if (!e->rst_in) e->rx += s.bytes;
      break;
    case segment::fin:
      note("deliver c%llu fin", static_cast<unsigned long long>(e->id));
      e->fin_in = true;
      break;
    case segment::rst:
      // What had arrived stays readable; the reset is reported after it (as Linux
      // does), as EPIPE when the peer had already ended its stream.
      note("deliver c%llu rst (%zu unread bytes)", static_cast<unsigned long long>(e->id), e->unread());
      e->rst_in = true;
      e->rst_error = e->fin_in ? EPIPE : ECONNRESET;
      break;
  }
  dirty(e->fd);
}

// Both ends closed (or one end gone and nothing more can arrive): forget the pair.
void sim_network::release_if_done(std::uint64_t id) {
  endpoint* e = ep(id);
  if (e == nullptr || !e->closed || !e->transit.empty()) return;
  endpoint* p = ep(e->peer);
  if (p != nullptr && (!p->closed || !p->transit.empty())) return;
  std::uint64_t peer = e->peer;
  endpoints_.erase(id);
  if (p != nullptr) endpoints_.erase(peer);
}

void sim_network::reset_both(endpoint& e) {
  note("reset c%llu", static_cast<unsigned long long>(e.id));
  transmit(e, segment::rst, {});
  e.rst_in = true;
  e.rst_error = ECONNRESET;
  dirty(e.fd);
}

// ---- descriptors ----

int sim_network::fail(int err) noexcept {
  errno = err;
  return -1;
}

// A real descriptor reserves the number: an unconnected TCP socket of the same family,
// which never connects. Options set on it with a plain setsockopt(2) stay readable
// (SO_LINGER is read from it at close), and a stray real send or receive fails.
int sim_network::placeholder(int family, int type) {
  int fd = ::socket(family, type | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  auto idx = static_cast<std::size_t>(fd);
  if (idx >= socks_.size()) socks_.resize(idx + 1);
  socks_[idx] = std::make_unique<vsock>();
  socks_[idx]->rcvbuf = model_.buffer_bytes;
  socks_[idx]->id = next_sock_++;
  ++open_;
  return fd;
}

void sim_network::add_host(std::uint32_t id, const socket_address& address) {
  if (!(address.is_ipv4() || address.is_ipv6()) || is_wildcard(address) || is_loopback(address))
    throw std::invalid_argument("ringio::sim::world: a host's address is a unicast IP address, not " +
                                address.to_string());
  if (host_addresses_.size() < id) host_addresses_.resize(id);
  host_addresses_[id - 1] = address.with_port(0);
  note("host %u at %s", id, address.with_port(0).to_string().c_str());
}

const socket_address* sim_network::host_address() const noexcept {
  return host_ == 0 || host_ > host_addresses_.size() ? nullptr : &host_addresses_[host_ - 1];
}

// On a host, its wildcard and loopback addresses (of its family) are its own address:
// each host is a machine with one interface.
socket_address sim_network::on_host(const socket_address& a) const {
  const socket_address* self = host_address();
  if (self == nullptr || a.family() != self->family() || !(is_wildcard(a) || is_loopback(a))) return a;
  return self->with_port(a.port());
}

int sim_network::socket(int domain, int type, int /*protocol*/) {
  ++operations_;
  if (chance(model_.descriptor_exhaustion)) {
    note("socket -> EMFILE");
    return fail(EMFILE);
  }
  const bool dgram = (type & 0xf) == SOCK_DGRAM;
  int fd = placeholder(domain, dgram ? SOCK_DGRAM : SOCK_STREAM);
  if (fd < 0) return -1;
  socks_[static_cast<std::size_t>(fd)]->family = domain;
  socks_[static_cast<std::size_t>(fd)]->dgram = dgram;
  socks_[static_cast<std::size_t>(fd)]->owner = host_;
  (void)type;
  note("socket -> s%llu", sid(fd));
  return fd;
}

std::string sim_network::key_of(const socket_address& a) const {
  return std::string(reinterpret_cast<const char*>(a.native()), a.size());
}

// The listener a connection to `a` reaches: one bound to `a` itself, else to the
// wildcard of its family, else (IPv4) an IPv6 wildcard that is not IPv6-only. Among
// several (SO_REUSEPORT) the seed picks one.
int sim_network::listener_for(const socket_address& a) const {
  auto pick = [&](const socket_address& k) -> int {
    auto it = listeners_.find(key_of(k));
    if (it == listeners_.end() || it->second.empty()) return -1;
    return it->second[const_cast<sim_network*>(this)->below(it->second.size())];
  };
  if (int fd = pick(a); fd >= 0) return fd;
  if (int fd = pick(a.is_ipv6() ? socket_address::any_ipv6(a.port()) : socket_address::any(a.port())); fd >= 0)
    return fd;
  if (a.is_ipv4()) {
    auto it = listeners_.find(key_of(socket_address::any_ipv6(a.port())));
    if (it != listeners_.end())
      for (int fd : it->second)
        if (!sock(fd)->v6only) return fd;
  }
  return -1;
}

// Whether binding `a` would clash with a bound socket: same port and family, and the
// same address or a wildcard on either side; two SO_REUSEPORT sockets may share.
bool sim_network::address_in_use(const socket_address& a, const vsock* except) const {
  const vsock* me = except;
  for (const auto& o : socks_) {
    if (o == nullptr || o.get() == except || !o->bound || o->local.port() != a.port()) continue;
    if (me != nullptr && o->dgram != me->dgram) continue;  // UDP and TCP ports are apart
    const bool same_family = o->local.family() == a.family();
    const bool dual = !same_family && ((o->local.is_ipv6() && is_wildcard(o->local) && !o->v6only) ||
                                       (a.is_ipv6() && is_wildcard(a) && me != nullptr && !me->v6only));
    if (!same_family && !dual) continue;
    if (!(o->local == a || is_wildcard(o->local) || is_wildcard(a))) continue;
    if (o->reuse_port && me != nullptr && me->reuse_port) continue;
    return true;
  }
  return false;
}

// A free port in Linux's ephemeral range (32768-60999) for an address like `near`.
int sim_network::ephemeral_port(const socket_address& near) {
  for (int tries = 0; tries < 60999 - 32768 + 1; ++tries) {
    std::uint16_t p = next_port_;
    next_port_ = next_port_ >= 60999 ? 32768 : static_cast<std::uint16_t>(next_port_ + 1);
    if (!address_in_use(near.with_port(p), nullptr)) return p;
  }
  return -1;
}

bool sim_network::ensure_bound(vsock& s, int fd) {
  if (s.bound) return true;
  socket_address a =
      on_host(s.family == AF_INET6 ? socket_address::from_host("::1", 0).value() : socket_address::loopback(0));
  int port = ephemeral_port(a);
  if (port < 0) return false;
  s.local = a.with_port(static_cast<std::uint16_t>(port));
  s.bound = true;
  note("autobind s%llu %s", sid(fd), s.local.to_string().c_str());
  return true;
}

// Every address is local in the world (a program may bind 10.0.0.1 or 192.0.2.1 and
// be reached there): that is how several hosts share one simulated network.
int sim_network::bind(int fd, const sockaddr* a, socklen_t len) {
  ++operations_;
  vsock* s = sock(fd);
  if (s->bound || s->st != vsock::state::fresh) return fail(EINVAL);
  socket_address at = address_from(a, len);
  if (at.family() != s->family) return fail(EAFNOSUPPORT);
  at = on_host(at);
  if (const socket_address* self = host_address();
      self != nullptr && !is_wildcard(at) && !is_loopback(at) && !(at.with_port(0) == *self))
    return fail(EADDRNOTAVAIL);  // another host's address: not an address of this machine
  if (at.port() == 0) {
    int port = ephemeral_port(at);
    if (port < 0) return fail(EADDRNOTAVAIL);
    at = at.with_port(static_cast<std::uint16_t>(port));
  } else if (address_in_use(at, s)) {
    return fail(EADDRINUSE);
  }
  s->local = at;
  s->bound = true;
  note("bind s%llu %s", sid(fd), at.to_string().c_str());
  return 0;
}

int sim_network::listen(int fd, int backlog) {
  ++operations_;
  vsock* s = sock(fd);
  if (s->dgram) return fail(EOPNOTSUPP);
  if (s->st == vsock::state::listening) return 0;
  if (s->st != vsock::state::fresh) return fail(EINVAL);
  if (!s->bound) {
    socket_address any = on_host(s->family == AF_INET6 ? socket_address::any_ipv6(0) : socket_address::any(0));
    int port = ephemeral_port(any);
    if (port < 0) return fail(EADDRINUSE);
    s->local = any.with_port(static_cast<std::uint16_t>(port));
    s->bound = true;
  }
  listeners_[key_of(s->local)].push_back(fd);
  s->st = vsock::state::listening;
  // Linux queues backlog + 1 connections (listen(0) still takes one).
  s->backlog = std::clamp(backlog, 0, model_.max_backlog) + 1;
  note("listen s%llu %s backlog %d", sid(fd), s->local.to_string().c_str(), s->backlog);
  return 0;
}

int sim_network::accept4(int fd, sockaddr* a, socklen_t* len, int /*flags*/) {
  ++operations_;
  vsock* s = sock(fd);
  if (s->st != vsock::state::listening) return fail(EINVAL);
  if (s->pending.empty()) return fail(EAGAIN);
  if (chance(model_.descriptor_exhaustion)) {
    note("accept s%llu -> EMFILE", sid(fd));
    return fail(EMFILE);
  }
  std::uint64_t id = s->pending.front();
  s->pending.pop_front();
  endpoint* e = ep(id);
  if (e != nullptr && chance(model_.accept_abort)) {
    note("accept s%llu -> ECONNABORTED", sid(fd));
    transmit(*e, segment::rst, {});
    e->closed = true;
    release_if_done(id);
    return fail(ECONNABORTED);
  }
  int nfd = placeholder(s->family, SOCK_STREAM);
  if (nfd < 0) return -1;
  s = sock(fd);  // the table may have grown
  vsock& c = *socks_[static_cast<std::size_t>(nfd)];
  c.family = s->family;
  c.owner = host_;
  c.st = vsock::state::connected;
  c.ep = id;
  c.bound = true;
  if (e != nullptr) {
    e->fd = nfd;
    c.local = e->local;
    copy_address(e->remote, a, len);
  }
  note("accept s%llu -> s%llu", sid(fd), sid(nfd));
  return nfd;
}

int sim_network::connect(int fd, const sockaddr* a, socklen_t len) {
  ++operations_;
  vsock* s = sock(fd);
  if (s->dgram) {  // UDP: only fixes the peer
    socket_address to = address_from(a, len);
    if (const socket_address* self = host_address();
        self != nullptr && is_loopback(to) && to.family() == self->family())
      to = self->with_port(to.port());
    if (!ensure_bound(*s, fd)) return fail(EADDRNOTAVAIL);
    s->peer = to;
    s->has_peer = true;
    note("connect s%llu %s (udp)", sid(fd), to.to_string().c_str());
    return 0;
  }
  switch (s->st) {
    case vsock::state::connecting:
      return fail(EALREADY);
    case vsock::state::connected:
      return fail(EISCONN);
    case vsock::state::listening:
    case vsock::state::failed:
      return fail(EINVAL);
    case vsock::state::fresh:
      break;
  }
  socket_address to = address_from(a, len);
  if (const socket_address* self = host_address(); self != nullptr && is_loopback(to) && to.family() == self->family())
    to = self->with_port(to.port());  // a host's loopback is the host itself
  if (!ensure_bound(*s, fd)) return fail(EADDRNOTAVAIL);
  endpoint& c = new_endpoint();
  c.fd = fd;
  c.local = s->local;
  c.remote = to;
  c.rcvbuf = s->rcvbuf;
  s->ep = c.id;
  s->st = vsock::state::connecting;
  std::uint64_t id = c.id;
  if (chance(model_.connect_refused)) {
    note("connect s%llu %s -> refused (fault)", sid(fd), to.to_string().c_str());
    at(now_ + 2 * latency(), [this, id] { refuse(id); });
  } else {
    note("connect s%llu %s", sid(fd), to.to_string().c_str());
    at(now_ + latency(), [this, id, to] { syn_arrives(id, to); });
  }
  return fail(EINPROGRESS);
}

void sim_network::refuse(std::uint64_t client) {
  endpoint* c = ep(client);
  if (c == nullptr || c->closed) return;
  vsock* s = sock(c->fd);
  if (s == nullptr || s->ep != client) return;
  note("connect s%llu refused", sid(c->fd));
  s->st = vsock::state::failed;
  s->so_error = ECONNREFUSED;
  dirty(c->fd);
  c->closed = true;
  release_if_done(client);
}

void sim_network::syn_arrives(std::uint64_t client, socket_address to) {
  endpoint* c = ep(client);
  if (c == nullptr || c->closed) return;
  if (is_cut(c->local, to)) {  // lost on the cut link: sent again a second later
    at(now_ + syn_retry_ns, [this, client, to] { syn_arrives(client, to); });
    return;
  }
  int lfd = listener_for(to);
  if (lfd < 0) {
    std::int64_t back = now_ + latency();
    at(back, [this, client] { refuse(client); });
    return;
  }
  vsock& l = *sock(lfd);
  if (static_cast<int>(l.pending.size()) >= l.backlog) {  // backlog holds listen()'s + 1
    note("syn to %s dropped (backlog full)", to.to_string().c_str());
    at(now_ + syn_retry_ns, [this, client, to] { syn_arrives(client, to); });
    return;
  }
  endpoint& srv = new_endpoint();
  c = ep(client);
  const bool mapped = l.local.is_ipv6() && to.is_ipv4();  // an IPv4 client of a dual-stack listener
  srv.local = mapped ? v4_mapped(to) : to;
  srv.remote = mapped ? v4_mapped(c->local) : c->local;
  srv.peer = client;
  srv.established = true;
  c->peer = srv.id;
  l.pending.push_back(srv.id);
  dirty(lfd);
  // The SYN-ACK: nothing the server sends may overtake it.
  std::int64_t synack = now_ + latency();
  srv.out_last = synack;
  note("syn to %s queued on s%llu", to.to_string().c_str(), sid(lfd));
  at(synack, [this, client] {
    endpoint* e = ep(client);
    if (e == nullptr || e->closed) return;
    vsock* s = sock(e->fd);
    if (s == nullptr || s->ep != client) return;
    e->established = true;
    s->st = vsock::state::connected;
    note("connected s%llu", sid(e->fd));
    dirty(e->fd);
  });
}

// ---- data ----

ssize_t sim_network::transfer_in(int fd, void* buf, std::size_t n, int flags) {
  vsock* s = sock(fd);
  if (s->st == vsock::state::connecting) return fail(EAGAIN);
  if (s->st != vsock::state::connected) return fail(ENOTCONN);
  endpoint& e = *ep(s->ep);
  if (std::size_t avail = e.unread(); avail > 0 && n > 0) {
    std::size_t m = std::min(n, avail);
    if (m > 1 && chance(model_.short_transfer)) m = 1 + below(m);
    std::memcpy(buf, e.rx.data() + e.rx_off, m);
    if ((flags & MSG_PEEK) == 0) {
      e.rx_off += m;
      if (e.rx_off == e.rx.size()) {
        e.rx.clear();
        e.rx_off = 0;
      }
      if (endpoint* p = ep(e.peer)) dirty(p->fd);  // the window opened
    }
    note("recv s%llu %zu -> %zu", sid(fd), n, m);
    return static_cast<ssize_t>(m);
  }
  // After the peer's FIN a receive reads end of stream even if a reset followed (the
  // reset stays pending for a send or SO_ERROR), as on Linux.
  if (e.rst_in && !e.rst_reported && !e.fin_in) {
    e.rst_reported = true;
    note("recv s%llu -> ECONNRESET", sid(fd));
    return fail(e.rst_error);
  }
  // SHUT_RD reads end of stream while nothing is there; data that arrives later is
  // still read (Linux keeps accepting it).
  if (e.rst_in || e.fin_in || e.rd_shut || n == 0) return 0;
  return fail(EAGAIN);
}

ssize_t sim_network::recv(int fd, void* buf, std::size_t n, int flags) {
  ++operations_;
  if (vsock* s = sock(fd); s->dgram) {
    iovec iov{buf, n};
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    return datagram_recv(fd, *s, m, flags);
  }
  return transfer_in(fd, buf, n, flags);
}

ssize_t sim_network::recvmsg(int fd, msghdr* m, int flags) {
  ++operations_;
  if (vsock* s = sock(fd); s->dgram) return datagram_recv(fd, *s, *m, flags);
  std::size_t total = 0;
  for (std::size_t i = 0; i < m->msg_iovlen; ++i) total += m->msg_iov[i].iov_len;
  std::string tmp(total, '\0');
  ssize_t r = transfer_in(fd, tmp.data(), total, flags);
  if (r <= 0) return r;
  std::size_t off = 0;
  for (std::size_t i = 0; i < m->msg_iovlen && off < static_cast<std::size_t>(r); ++i) {
    std::size_t k = std::min(m->msg_iov[i].iov_len, static_cast<std::size_t>(r) - off);
    std::memcpy(m->msg_iov[i].iov_base, tmp.data() + off, k);
    off += k;
  }
  m->msg_flags = 0;
  return r;
}

ssize_t sim_network::send(int fd, const void* buf, std::size_t n, int /*flags*/) {
  ++operations_;
  vsock* s = sock(fd);
  if (s->dgram) {
    iovec iov{const_cast<void*>(buf), n};
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    return datagram_send(fd, *s, m);
  }
  if (s->st == vsock::state::connecting) return fail(EAGAIN);
  if (s->st != vsock::state::connected) return fail(s->st == vsock::state::failed ? ECONNREFUSED : ENOTCONN);
  endpoint& e = *ep(s->ep);
  if (e.rst_in) {
    if (!e.rst_reported) {
      e.rst_reported = true;
      return fail(e.rst_error);
    }
    return fail(EPIPE);
  }
  if (e.fin_out) return fail(EPIPE);
  if (n == 0) return 0;
  endpoint* to = ep(e.peer);
  std::size_t room = to == nullptr || to->closed ? model_.buffer_bytes : room_towards(*to);
  if (room == 0) return fail(EAGAIN);
  if (chance(model_.reset)) {
    reset_both(e);
    e.rst_reported = true;
    return fail(ECONNRESET);
  }
  std::size_t m = std::min(n, room);
  if (m > 1 && chance(model_.short_transfer)) m = 1 + below(m);
  note("send s%llu %zu -> %zu", sid(fd), n, m);
  transmit(e, segment::data, std::string(static_cast<const char*>(buf), m));
  return static_cast<ssize_t>(m);
}

ssize_t sim_network::sendmsg(int fd, const msghdr* m, int flags) {
  if (vsock* s = sock(fd); s->dgram) {
    ++operations_;
    return datagram_send(fd, *s, *m);
  }
  std::string tmp;
  for (std::size_t i = 0; i < m->msg_iovlen; ++i)
    tmp.append(static_cast<const char*>(m->msg_iov[i].iov_base), m->msg_iov[i].iov_len);
  return send(fd, tmp.data(), tmp.size(), flags);
}

int sim_network::shutdown(int fd, int how) {
  ++operations_;
  vsock* s = sock(fd);
  if (s->dgram) return s->has_peer ? 0 : fail(ENOTCONN);
  if (s->st != vsock::state::connected) return fail(ENOTCONN);
  endpoint& e = *ep(s->ep);
  if (e.rst_in) return fail(ENOTCONN);  // a reset connection is closed
  if ((how == SHUT_WR || how == SHUT_RDWR) && !e.fin_out && !e.rst_in) {
    e.fin_out = true;
    transmit(e, segment::fin, {});
  }
  if (how == SHUT_RD || how == SHUT_RDWR) e.rd_shut = true;
  note("shutdown s%llu %d", sid(fd), how);
  dirty(fd);
  return 0;
}

int sim_network::close(int fd) {
  ++operations_;
  vsock* s = sock(fd);
  note("close s%llu", sid(fd));
  if (s->st == vsock::state::listening) {
    auto& same = listeners_[key_of(s->local)];
    std::erase(same, fd);
    if (same.empty()) listeners_.erase(key_of(s->local));
    for (std::uint64_t id : s->pending)
      if (endpoint* e = ep(id)) {
        transmit(*e, segment::rst, {});
        e->closed = true;
        release_if_done(id);
      }
  } else if (endpoint* e = ep(s->ep); e != nullptr && e->fd == fd) {
    // Unread data or SO_LINGER 0 make the close a reset (as Linux does); else a FIN.
    linger l{};
    socklen_t len = sizeof l;
    if (::getsockopt(fd, SOL_SOCKET, SO_LINGER, &l, &len) == 0 && l.l_onoff != 0 && l.l_linger == 0) s->linger0 = true;
    if (!e->rst_in && (e->unread() > 0 || s->linger0)) transmit(*e, segment::rst, {});
    else if (!e->fin_out && !e->rst_in && e->established) transmit(*e, segment::fin, {});
    e->closed = true;
    e->fd = -1;
    e->rx.clear();
    e->rx_off = 0;
    release_if_done(e->id);
  }
  socks_[static_cast<std::size_t>(fd)].reset();
  --open_;
  return ::close(fd);
}

// ---- addresses and options ----

int sim_network::getsockname(int fd, sockaddr* a, socklen_t* len) {
  vsock* s = sock(fd);
  socket_address any = s->family == AF_INET6 ? socket_address::any_ipv6(0) : socket_address::any(0);
  return copy_address(s->bound ? s->local : any, a, len);
}

int sim_network::getpeername(int fd, sockaddr* a, socklen_t* len) {
  vsock* s = sock(fd);
  endpoint* e = s->st == vsock::state::connected ? ep(s->ep) : nullptr;
  if (e == nullptr || e->rst_in) return fail(ENOTCONN);
  return copy_address(e->remote, a, len);
}

int sim_network::getsockopt(int fd, int level, int name, void* v, socklen_t* len) {
  vsock* s = sock(fd);
  int value = 0;
  if (level == SOL_SOCKET && name == SO_ERROR) {
    value = s->so_error;
    s->so_error = 0;
    endpoint* e = s->st == vsock::state::connected ? ep(s->ep) : nullptr;
    if (value == 0 && e != nullptr && e->rst_in && !e->rst_reported) {  // a pending reset is the socket's error
      value = e->rst_error;
      e->rst_reported = true;
    }
  } else if (level == SOL_SOCKET && name == SO_TYPE) {
    value = s->dgram ? SOCK_DGRAM : SOCK_STREAM;
  } else if (level == SOL_SOCKET && (name == SO_RCVBUF || name == SO_SNDBUF)) {
    value = static_cast<int>(s->rcvbuf);
  } else if (level == SOL_SOCKET && name == SO_DOMAIN) {
    value = s->family;
  } else if (level == SOL_SOCKET && name == SO_ACCEPTCONN) {
    value = s->st == vsock::state::listening ? 1 : 0;
  } else if (level == IPPROTO_TCP && name == TCP_NODELAY) {
    value = s->nodelay ? 1 : 0;
  } else {
    return fail(ENOPROTOOPT);
  }
  if (v == nullptr || len == nullptr || *len < sizeof value) return fail(EINVAL);
  std::memcpy(v, &value, sizeof value);
  *len = sizeof value;
  return 0;
}

int sim_network::setsockopt(int fd, int level, int name, const void* v, socklen_t len) {
  vsock* s = sock(fd);
  int value = 0;
  if (v != nullptr && len >= sizeof value) std::memcpy(&value, v, sizeof value);
  if (level == SOL_SOCKET && name == SO_LINGER && len >= sizeof(linger)) {
    linger l;
    std::memcpy(&l, v, sizeof l);
    s->linger0 = l.l_onoff != 0 && l.l_linger == 0;
  } else if (level == SOL_SOCKET && name == SO_RCVBUF && value > 0) {
    s->rcvbuf = static_cast<std::size_t>(value);
    if (endpoint* e = ep(s->ep)) e->rcvbuf = s->rcvbuf;
  } else if (level == IPPROTO_TCP && name == TCP_NODELAY) {
    s->nodelay = value != 0;
  } else if (level == SOL_SOCKET && name == SO_REUSEPORT) {
    s->reuse_port = value != 0;
  } else if (level == IPPROTO_IPV6 && name == IPV6_V6ONLY) {
    s->v6only = value != 0;
  } else if (level == SOL_SOCKET && name == SO_BROADCAST) {
    s->broadcast = value != 0;
  }
  (void)::setsockopt(fd, level, name, v, len);  // kept on the placeholder, for plain getsockopt(2)
  return 0;                                     // other options are accepted and have no effect in the simulation
}

// ---- readiness ----

bool sim_network::readable(int fd) const noexcept {
  const vsock* s = sock(fd);
  if (s == nullptr) return false;
  if (s->dgram) return !s->inbox.empty() || s->so_error != 0;
  switch (s->st) {
    case vsock::state::listening:
      return !s->pending.empty();
    case vsock::state::failed:
      return true;
    case vsock::state::connected: {
      const endpoint* e = ep(s->ep);
      return e == nullptr || e->unread() > 0 || e->fin_in || e->rst_in || e->rd_shut;
    }
    default:
      return false;
  }
}

bool sim_network::writable(int fd) const noexcept {
  const vsock* s = sock(fd);
  if (s == nullptr) return false;
  if (s->dgram) return true;
  switch (s->st) {
    case vsock::state::failed:
      return true;
    case vsock::state::connected: {
      const endpoint* e = ep(s->ep);
      if (e == nullptr || e->rst_in || e->fin_out) return true;
      const endpoint* to = ep(e->peer);
      return to == nullptr || to->closed || room_towards(*to) > 0;
    }
    default:
      return false;
  }
}

}  // namespace ringio::detail

// ---- datagrams ----

namespace ringio::detail {

// The UDP socket a datagram to `to` reaches: one bound to `to`, else to the wildcard
// of its family (or a dual-stack IPv6 wildcard for IPv4).
int sim_network::datagram_receiver(const socket_address& to) const {
  int wildcard = -1;
  for (std::size_t i = 0; i < socks_.size(); ++i) {
    const vsock* o = socks_[i].get();
    if (o == nullptr || !o->dgram || !o->bound || o->local.port() != to.port()) continue;
    if (o->local == to) return static_cast<int>(i);
    if (wildcard < 0 && is_wildcard(o->local) &&
        (o->local.family() == to.family() || (o->local.is_ipv6() && to.is_ipv4() && !o->v6only)))
      wildcard = static_cast<int>(i);
  }
  return wildcard;
}

// One datagram, whole or not at all: lost, duplicated or delayed (each copy on its own
// latency, so datagrams overtake each other) as the fault model draws; dropped on a cut
// link. A connected socket sends to its peer only.
ssize_t sim_network::datagram_send(int fd, vsock& s, const msghdr& m) {
  if (s.so_error != 0) return fail(std::exchange(s.so_error, 0));
  socket_address to;
  if (m.msg_name != nullptr && m.msg_namelen > 0) {
    to = address_from(static_cast<const sockaddr*>(m.msg_name), m.msg_namelen);
    if (const socket_address* self = host_address();
        self != nullptr && is_loopback(to) && to.family() == self->family())
      to = self->with_port(to.port());
  } else if (s.has_peer) {
    to = s.peer;
  } else {
    return fail(EDESTADDRREQ);
  }
  // What Linux refuses, and 0.0.0.0 meaning this machine.
  if (to.is_ipv6() && s.family == AF_INET) return fail(EAFNOSUPPORT);
  if (to.port() == 0) return fail(EINVAL);
  if (to.is_ipv4() && reinterpret_cast<const sockaddr_in*>(to.native())->sin_addr.s_addr == INADDR_BROADCAST) {
    if (!s.broadcast) return fail(EACCES);
  }
  if (is_wildcard(to))
    to = on_host(to.is_ipv6() ? *socket_address::from_host("::1", to.port()) : socket_address::loopback(to.port()));
  std::string bytes;
  for (std::size_t i = 0; i < m.msg_iovlen; ++i)
    bytes.append(static_cast<const char*>(m.msg_iov[i].iov_base), m.msg_iov[i].iov_len);
  if (bytes.size() > 65507) return fail(EMSGSIZE);
  if (!ensure_bound(s, fd)) return fail(EADDRNOTAVAIL);
  const auto n = static_cast<ssize_t>(bytes.size());
  if (chance(model_.datagram_loss)) {
    note("sendto s%llu %s %zd: lost", sid(fd), to.to_string().c_str(), n);
    return n;
  }
  const int copies = chance(model_.datagram_duplicate) ? 2 : 1;
  note("sendto s%llu %s %zd%s", sid(fd), to.to_string().c_str(), n, copies == 2 ? " (duplicated)" : "");
  const socket_address from = s.local;
  const std::uint64_t sender_id = s.id;
  for (int c = 0; c < copies; ++c)
    at(now_ + latency(), [this, to, from, bytes, fd, sender_id] { datagram_arrives(to, from, bytes, fd, sender_id); });
  return n;
}

void sim_network::datagram_arrives(socket_address to, socket_address from, std::string bytes, int sender,
                                   std::uint64_t sender_id) {
  if (is_cut(from, to)) {
    note("datagram %s -> %s lost on a cut link", from.to_string().c_str(), to.to_string().c_str());
    return;
  }
  const int rfd = datagram_receiver(to);
  vsock* r = sock(rfd);
  if (r == nullptr) {
    // ICMP port unreachable: a connected sender hears ECONNREFUSED on its next call.
    vsock* s = sock(sender);
    if (s != nullptr && s->id == sender_id && s->has_peer && s->peer == to) {
      s->so_error = ECONNREFUSED;
      dirty(sender);
    }
    note("datagram %s -> %s: nobody there", from.to_string().c_str(), to.to_string().c_str());
    return;
  }
  if (r->local.is_ipv6() && from.is_ipv4()) from = v4_mapped(from);  // a dual-stack socket's view
  if (r->has_peer && !(r->peer == from)) return;                     // a connected socket takes its peer's only
  // The receive buffer: the world's, or a smaller SO_RCVBUF set on the descriptor itself
  // (which the kernel reports doubled, as it accounts it).
  std::size_t limit = r->rcvbuf;
  int real = 0;
  socklen_t real_len = sizeof real;
  if (::getsockopt(rfd, SOL_SOCKET, SO_RCVBUF, &real, &real_len) == 0 && real > 0)
    limit = std::min(limit, static_cast<std::size_t>(real));
  if (r->inbox_bytes + bytes.size() > limit) {
    note("datagram -> s%llu dropped (receive buffer full)", sid(rfd));
    return;
  }
  note("datagram %s -> s%llu %zu", from.to_string().c_str(), sid(rfd), bytes.size());
  r->inbox_bytes += bytes.size();
  r->inbox.emplace_back(from, std::move(bytes));
  dirty(rfd);
}

// The oldest datagram, truncated to the buffers (MSG_TRUNC in msg_flags), with its
// sender in msg_name; MSG_PEEK leaves it queued.
ssize_t sim_network::datagram_recv(int fd, vsock& s, msghdr& m, int flags) {
  if (s.so_error != 0) return fail(std::exchange(s.so_error, 0));
  if (s.inbox.empty()) return fail(EAGAIN);
  const auto& [from, bytes] = s.inbox.front();
  std::size_t off = 0;
  for (std::size_t i = 0; i < m.msg_iovlen && off < bytes.size(); ++i) {
    const std::size_t k = std::min(m.msg_iov[i].iov_len, bytes.size() - off);
    std::memcpy(m.msg_iov[i].iov_base, bytes.data() + off, k);
    off += k;
  }
  m.msg_flags = off < bytes.size() ? MSG_TRUNC : 0;
  if (m.msg_name != nullptr) copy_address(from, static_cast<sockaddr*>(m.msg_name), &m.msg_namelen);
  const auto n = static_cast<ssize_t>((flags & MSG_TRUNC) != 0 ? bytes.size() : off);
  note("recvfrom s%llu %zd", sid(fd), n);
  if ((flags & MSG_PEEK) == 0) {
    s.inbox_bytes -= bytes.size();
    s.inbox.pop_front();
  }
  return n;
}

}  // namespace ringio::detail
