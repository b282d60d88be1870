// SPDX-License-Identifier: Apache-2.0
// A seeded adversarial run: a tls::stream client against a real OpenSSL server
// (openssl_peer.hpp, non-blocking on a thread of its own), with deadlines, stops,
// half-closes, resets and slow or absent reads landing at random points on both sides.
// Each round checks:
// - every byte the peer sent before closing is delivered (a graceful end: close_notify,
//   or a half-close without it), or, after a reset, a prefix of them and then an error;
//   the bytes each side received are exactly a prefix of what the other side sent, and
//   the peer never sees a broken record;
// - nothing outlives its deadline (or its stop) by much, and the round ends in time;
// - nothing spins: the loop's iterations stay within a bound of its completions.
// RINGIO_TEST_SEED replays a run; the seed is printed, and named by every failure.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "openssl_peer.hpp"
#include "ringio/ringio.hpp"
#include "ringio/tls.hpp"
#include "support/backend_test.hpp"
#include "support/seed.hpp"
#include "tls_support.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

using clock_type = std::chrono::steady_clock;

class TlsAdversarial : public backend_test {
 protected:
  void SetUp() override {
    backend_test::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(test_certs::get().ok);
  }
};

// How late an operation may complete after its deadline or stop. Generous for slow
// (sanitizer) builds; a lost cancellation or a wait on the other direction shows up as
// seconds.
constexpr auto late_slack = 300ms;
// How long the client may take to see the peer's end once the peer made it.
constexpr auto end_limit = 4s;

// The byte at `offset` of a stream named by `key`: both directions carry such streams,
// so that each side checks every byte it receives.
std::byte pattern_byte(std::uint64_t key, std::size_t offset) {
  std::uint64_t x = (offset + 1) * 0x9E3779B97F4A7C15ull ^ key;
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  return static_cast<std::byte>(x >> 56);
}
void fill_pattern(std::uint64_t key, std::size_t offset, std::span<std::byte> out) {
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = pattern_byte(key, offset + i);
}
// The first offset in [offset, offset + got.size()) whose byte differs, or npos.
std::size_t first_mismatch(std::uint64_t key, std::size_t offset, std::span<const std::byte> got) {
  for (std::size_t i = 0; i < got.size(); ++i)
    if (got[i] != pattern_byte(key, offset + i)) return offset + i;
  return std::string::npos;
}

// ---- the plan of a round (all drawn from the seed before it starts) ----

enum class peer_end { close_notify, half_close, reset, close_unread };
enum class peer_reads { eagerly, slowly, never };

struct round_plan {
  std::uint64_t peer_key = 0, client_key = 0;
  int max_version = TLS1_3_VERSION;
  int tickets = 0;
  int small_buffers = 0;  // SO_SNDBUF of the client, SO_RCVBUF of the peer (0: the kernel's)
  // The peer.
  std::vector<std::size_t> messages;  // sizes, sent one after another
  std::vector<int> gaps_us;           // pause before each message
  std::size_t end_after = 0;          // ends after this many bytes (a reset may cut a message)
  peer_end end = peer_end::close_notify;
  peer_reads reads = peer_reads::eagerly;
  int key_update_at = -1;  // message index (TLS 1.3)
  bool answers = false;    // sends each message only once it has all the client's sends took
  // The client.
  int writes = 0;
  std::uint64_t writer_seed = 0, reader_seed = 0;
  bool client_close_notify = false;  // after its writes
  int client_reset_after_us = -1;    // shutdown(SHUT_RDWR) of its own socket
};

const char* name_of(peer_end e) {
  switch (e) {
    case peer_end::close_notify:
      return "close_notify";
    case peer_end::half_close:
      return "half-close without close_notify";
    case peer_end::reset:
      return "reset";
    case peer_end::close_unread:
      return "close_notify, then close on unread bytes";
  }
  return "?";
}
const char* name_of(peer_reads r) {
  switch (r) {
    case peer_reads::eagerly:
      return "eagerly";
    case peer_reads::slowly:
      return "slowly";
    case peer_reads::never:
      return "never";
  }
  return "?";
}

round_plan make_plan(std::mt19937_64& rng) {
  round_plan p;
  p.peer_key = rng();
  p.client_key = rng();
  p.max_version = rng() % 4 == 0 ? TLS1_2_VERSION : TLS1_3_VERSION;
  p.tickets = static_cast<int>(rng() % 3);
  // Small socket buffers: sends block within a few records, so that deadlines and stops
  // cut them inside a record.
  if (rng() % 2 == 0) p.small_buffers = 4096 + static_cast<int>(rng() % 28000);
  const int n = static_cast<int>(rng() % 10);
  std::size_t total = 0;
  for (int i = 0; i < n; ++i) {
    std::size_t size = 0;
    switch (rng() % 3) {
      case 0:
        size = 1 + rng() % 64;
        break;
      case 1:
        size = 1 + rng() % 4096;
        break;
      default:
        size = 1 + rng() % 40000;
        break;
    }
    p.messages.push_back(size);
    p.gaps_us.push_back(rng() % 3 == 0 ? 0 : static_cast<int>(rng() % 4000));
    total += size;
  }
  p.end = static_cast<peer_end>(rng() % 4);
  p.reads = static_cast<peer_reads>(rng() % 3);
  p.end_after = p.end == peer_end::reset && total > 0 ? rng() % (total + 1) : total;
  if (p.max_version == TLS1_3_VERSION && n > 0 && rng() % 3 == 0) p.key_update_at = static_cast<int>(rng() % n);
  // An answering peer reads slowly through small buffers, and the client's last send is
  // large with a short deadline: it is cut inside a record, and the peer waits for the
  // rest of it (which only the stream itself sends then).
  p.answers = p.reads != peer_reads::never && rng() % 2 == 0;
  if (p.answers) {
    p.reads = peer_reads::slowly;
    if (p.small_buffers == 0) p.small_buffers = 4096 + static_cast<int>(rng() % 12000);
    if (p.writes == 0) p.writes = 1;
  }
  p.writes = static_cast<int>(rng() % 8);
  p.writer_seed = rng();
  p.reader_seed = rng();
  p.client_close_notify = rng() % 3 == 0;
  if (rng() % 8 == 0) p.client_reset_after_us = static_cast<int>(rng() % 30000);
  return p;
}

std::string describe(const round_plan& p) {
  std::size_t total = 0;
  for (std::size_t m : p.messages) total += m;
  std::string s = std::string(p.max_version == TLS1_2_VERSION ? "TLS 1.2" : "TLS 1.3") +
                  ", peer: " + std::to_string(p.messages.size()) + " messages (" + std::to_string(total) +
                  " bytes), ends with " + name_of(p.end) + " after " + std::to_string(p.end_after) + " bytes, reads " +
                  name_of(p.reads);
  if (p.key_update_at >= 0) s += ", key update before message " + std::to_string(p.key_update_at);
  if (p.answers) s += ", answers (each message once it has all the client's sends took)";
  if (p.small_buffers > 0) s += ", socket buffers of " + std::to_string(p.small_buffers) + " bytes";
  s += "; client: " + std::to_string(p.writes) + " writes";
  if (p.client_close_notify) s += ", then close_notify";
  if (p.client_reset_after_us >= 0) s += ", resets itself after " + std::to_string(p.client_reset_after_us) + " us";
  return s;
}

// ---- the peer (its own thread, non-blocking OpenSSL over poll) ----

// What the client's writer has done so far (an answering peer waits for it).
struct client_progress {
  std::atomic<std::size_t> committed{0};  // bytes its sends took
  std::atomic<bool> done{false};          // it wrote its last
};

struct peer_report {
  std::size_t sent = 0;      // plaintext bytes SSL_write took (all written to the socket)
  std::size_t received = 0;  // plaintext bytes read, each checked
  bool notify_sent = false;  // its close_notify was written
  bool ended = false;        // it made its end (as planned)
  bool write_failed = false;
  bool saw_close_notify = false;
  bool starved = false;  // waited in vain for bytes the client's sends took
  std::size_t mismatch = std::string::npos;
  std::string read_error;  // a broken record or any other unexpected failure
};

constexpr int round_over = 1;  // gate: the client is done with the round

// Whether an SSL_read failure is an ordinary end, not damage: EOF, a reset, a
// truncation, or the client's decode_error alert (what OpenSSL answers a truncation
// with: the client saw the peer's half-close without close_notify).
bool is_ordinary_end(int e) {
  if (e == SSL_ERROR_SYSCALL) return true;  // EOF or a socket error (reset, broken pipe)
  if (e != SSL_ERROR_SSL) return false;
  unsigned long err = ERR_peek_error();
  if (ERR_GET_LIB(err) != ERR_LIB_SSL) return false;
  int reason = ERR_GET_REASON(err);
  return reason == SSL_R_UNEXPECTED_EOF_WHILE_READING || reason == SSL_AD_REASON_OFFSET + SSL_AD_DECODE_ERROR;
}

void run_peer(openssl_peer& p, const round_plan& plan, peer_report& rep, std::uint64_t seed,
              const client_progress& client) {
  std::mt19937_64 rng(seed);
  SSL* ssl = p.ssl();
  const int fd = p.fd();
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  SSL_set_mode(ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  const auto started = clock_type::now();
  const auto hard_end = started + 6s;
  std::size_t message = 0, offset = 0, stream_offset = 0;
  std::vector<std::byte> current, in(65536);
  auto next_write = started + std::chrono::microseconds(plan.gaps_us.empty() ? 0 : plan.gaps_us[0]);
  auto next_read = started;
  bool writing = true, reading = plan.reads != peer_reads::never, key_updated = false, half_closed = false;
  auto waiting_since = clock_type::time_point::max();  // an answering peer waiting for the client's bytes
  while (clock_type::now() < hard_end && !p.stopping()) {
    const auto now = clock_type::now();
    bool want_out = false;
    // Write.
    if (writing) {
      if (stream_offset >= plan.end_after || message >= plan.messages.size()) {
        writing = false;
      } else if (plan.answers && reading && offset == 0 && rep.received < client.committed.load()) {
        // An answer needs the whole request: all the client's sends took so far.
        if (waiting_since == clock_type::time_point::max()) waiting_since = now;
        if (now - waiting_since > 3s) {
          rep.starved = true;
          writing = false;
          rep.write_failed = true;  // no graceful end: the round failed
        }
      } else if (now >= next_write) {
        waiting_since = clock_type::time_point::max();
        if (offset == 0 && current.empty()) {
          current.resize(plan.messages[message]);
          fill_pattern(plan.peer_key, stream_offset, current);
          if (static_cast<int>(message) == plan.key_update_at && !key_updated) {
            key_updated = SSL_key_update(ssl, SSL_KEY_UPDATE_REQUESTED) == 1;
          }
        }
        std::size_t len = std::min(current.size() - offset, plan.end_after - stream_offset);
        ERR_clear_error();
        int w = SSL_write(ssl, current.data() + offset, static_cast<int>(len));
        if (w > 0) {
          offset += static_cast<std::size_t>(w);
          stream_offset += static_cast<std::size_t>(w);
          rep.sent += static_cast<std::size_t>(w);
          if (offset == current.size()) {
            ++message;
            offset = 0;
            current.clear();
            if (message < plan.gaps_us.size()) next_write = now + std::chrono::microseconds(plan.gaps_us[message]);
          }
        } else {
          int e = SSL_get_error(ssl, w);
          if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) {
            want_out = e == SSL_ERROR_WANT_WRITE;
          } else {
            rep.write_failed = true;  // the client reset, or closed
            writing = false;
          }
        }
      }
      if (!writing && !rep.write_failed && plan.answers && reading &&
          (!client.done.load() || rep.received < client.committed.load())) {
        // The last answer needs all of the client's requests, the last one included.
        writing = true;
        if (waiting_since == clock_type::time_point::max()) waiting_since = now;
        if (now - waiting_since > 3s) {
          rep.starved = true;
          writing = false;
          rep.write_failed = true;
        }
      }
      if (!writing && !rep.write_failed) {
        // The end, as planned.
        if (plan.end == peer_end::reset) {
          p.reset();
          rep.ended = true;
          return;
        }
        if (plan.end == peer_end::close_notify || plan.end == peer_end::close_unread) {
          ERR_clear_error();
          int r = SSL_shutdown(ssl);
          if (r < 0 && SSL_get_error(ssl, r) == SSL_ERROR_WANT_WRITE) {
            writing = true;  // not all out yet: again on the next turn (end_after is reached)
            want_out = true;
          } else {
            rep.notify_sent = r >= 0;
          }
        }
        if (!writing) {
          if (plan.end == peer_end::close_unread) {
            p.close_socket();  // a reset when the client's bytes are unread
            rep.ended = true;
            return;
          }
          ::shutdown(fd, SHUT_WR);
          half_closed = true;
          rep.ended = true;
        }
      }
    }
    // Read.
    if (reading && now >= next_read) {
      std::size_t chunk = plan.reads == peer_reads::slowly ? 1 + rng() % 2048 : in.size();
      ERR_clear_error();
      int r = SSL_read(ssl, in.data(), static_cast<int>(chunk));
      if (r > 0) {
        std::size_t bad =
            first_mismatch(plan.client_key, rep.received, std::span(in).first(static_cast<std::size_t>(r)));
        if (bad != std::string::npos && rep.mismatch == std::string::npos) rep.mismatch = bad;
        rep.received += static_cast<std::size_t>(r);
        if (plan.reads == peer_reads::slowly) next_read = now + std::chrono::microseconds(rng() % 3000);
      } else {
        int e = SSL_get_error(ssl, r);
        if (e == SSL_ERROR_WANT_WRITE) {
          want_out = true;
        } else if (e != SSL_ERROR_WANT_READ) {
          if (e == SSL_ERROR_ZERO_RETURN) rep.saw_close_notify = true;
          else if (!is_ordinary_end(e)) {
            char text[256];
            ERR_error_string_n(ERR_peek_error(), text, sizeof text);
            rep.read_error = "SSL_read: error " + std::to_string(e) + ": " + text;
          }
          reading = false;
        }
      }
    }
    // Done: its end made, nothing more to read (or it never reads), and the client is done.
    if (!writing && half_closed && !reading && p.is_open(round_over)) return;
    if (!writing && rep.write_failed && !reading && p.is_open(round_over)) return;
    // Wait.
    pollfd pfd{fd, 0, 0};
    if (reading && clock_type::now() >= next_read) pfd.events |= POLLIN;
    if (want_out) pfd.events |= POLLOUT;
    auto wake = clock_type::now() + 5ms;
    if (writing && next_write < wake) wake = next_write;
    if (reading && next_read > clock_type::now() && next_read < wake) wake = next_read;
    auto wait_ms = std::chrono::duration_cast<std::chrono::milliseconds>(wake - clock_type::now()).count();
    ::poll(&pfd, 1, static_cast<int>(std::max<long long>(wait_ms, 0)));
  }
  // Out of time (the client is stuck, a failure it reports): a reset ends whatever of
  // the client's still waits for this socket.
  if (p.fd() >= 0) p.reset();
}

// ---- the client (ringio) ----

struct client_report {
  std::size_t received = 0;
  std::size_t committed = 0;  // bytes the client's sends took
  std::size_t mismatch = std::string::npos;
  std::optional<std::error_code> end;  // how the reader ended: nullopt = 0 (close_notify)
  bool reader_done = false;            // the reader saw the end (0 or an error)
  bool close_notify_sent = false;
  bool reset = false;
  int ops = 0, cut = 0;
  std::chrono::nanoseconds latest{0};  // the latest completion after a deadline or stop
  std::chrono::nanoseconds writer_stop{0};
  std::uint64_t iterations = 0, completions = 0;
  std::chrono::nanoseconds elapsed{0};
  std::string failure;
};

// Awaits `t` under `token`.
template <class T>
task<T> under(std::stop_token token, task<T> t) {
  std::optional<T> out;
  scope sc(token);
  sc.spawn(
      [](task<T> t, std::optional<T>& out) -> task<void> { out.emplace(co_await std::move(t)); }(std::move(t), out));
  co_await sc.join();
  co_return std::move(*out);
}

struct request_stop_of {
  std::stop_source* target;
  void operator()() const noexcept { target->request_stop(); }
};

// Awaits `t`, stopped after `d` (or by the awaiting task's stop).
template <class T>
task<T> stopped_after(std::chrono::microseconds d, task<T> t) {
  std::stop_source stop;
  std::stop_token outer = co_await current_stop_token();
  std::stop_callback link(outer, request_stop_of{&stop});
  scope timer{std::stop_token{}};
  timer.spawn([](std::stop_source& stop, std::chrono::microseconds d) -> task<void> {
    if (co_await sleep_for(d)) stop.request_stop();
  }(stop, d));
  T out = co_await under(stop.get_token(), std::move(t));
  timer.request_stop();
  co_await timer.join();
  co_return out;
}

void note_late(client_report& r, clock_type::time_point bound) {
  auto late = clock_type::now() - bound;
  if (late > r.latest) r.latest = late;
}

std::chrono::microseconds random_bound(std::mt19937_64& rng) {
  switch (rng() % 4) {
    case 0:
      return std::chrono::microseconds(rng() % 1000);
    case 1:
      return std::chrono::microseconds(rng() % 5000);
    case 2:
      return std::chrono::microseconds(5000 + rng() % 45000);
    default:
      return 200ms;
  }
}

// Sends the client's stream in random chunks, each bounded at random.
task<void> writer(tls::stream& s, const round_plan& plan, client_report& r, client_progress& progress) {
  std::mt19937_64 rng(plan.writer_seed);
  std::vector<std::byte> chunk;
  for (int i = 0; i < plan.writes; ++i) {
    std::stop_token token = co_await current_stop_token();
    if (token.stop_requested()) co_return;
    const bool last_answered = plan.answers && i == plan.writes - 1;
    chunk.resize(last_answered ? 60000 : 1 + rng() % 60000);
    fill_pattern(plan.client_key, r.committed, chunk);
    const auto d = last_answered ? std::chrono::microseconds(2000) : random_bound(rng);
    const auto begun = clock_type::now();
    result<std::size_t> sent = std::size_t{0};
    switch (last_answered ? rng() % 2 : rng() % 4) {
      case 0:
        sent = co_await s.send_all(chunk, begun + d);
        break;
      case 1:
        sent = co_await with_timeout(s.send_all(chunk), d);
        break;
      case 2:
        sent = co_await stopped_after(d, s.send(chunk));
        break;
      default:
        sent = co_await with_timeout(s.send(chunk), d);
        break;
    }
    note_late(r, begun + d);
    ++r.ops;
    if (sent) {
      r.committed += *sent;
      progress.committed = r.committed;
      if (*sent < chunk.size()) ++r.cut;
    } else if (sent.error() == std::errc::timed_out || sent.error() == std::errc::operation_canceled) {
      ++r.cut;
    } else {
      break;  // the connection failed
    }
  }
  progress.done = true;
  if (plan.client_close_notify) {
    const auto begun = clock_type::now();
    auto notified = co_await s.send_close_notify(50ms);
    note_late(r, begun + 50ms);
    r.close_notify_sent = notified.has_value();
  }
}

// Receives under random bounds until the end (0 or an error), checking every byte.
task<void> reader(tls::stream& s, const round_plan& plan, client_report& r, clock_type::time_point give_up) {
  std::mt19937_64 rng(plan.reader_seed);
  std::vector<std::byte> buf(20000);
  while (clock_type::now() < give_up) {
    mutable_buffer into(buf.data(), 1 + rng() % buf.size());
    const auto d = random_bound(rng);
    const auto begun = clock_type::now();
    result<std::size_t> got = std::size_t{0};
    switch (rng() % 5) {
      case 0:
        got = co_await s.recv(into, begun + d, tls::recv_wait::without_buffer);
        break;
      case 1:
        got = co_await s.recv(into, begun + d, tls::recv_wait::with_buffer);
        break;
      case 2:
        got = co_await with_timeout(s.recv(into), d);
        break;
      case 3:
        got = co_await stopped_after(d, s.recv(into));
        break;
      default:
        got = co_await with_timeout(s.recv_exact(into), d);
        break;
    }
    note_late(r, begun + d);
    ++r.ops;
    if (!got) {
      if (got.error() == std::errc::timed_out || got.error() == std::errc::operation_canceled) {
        ++r.cut;
        continue;
      }
      r.end = got.error();
      r.reader_done = true;
      co_return;
    }
    if (*got == 0) {
      r.reader_done = true;
      co_return;
    }
    std::size_t bad = first_mismatch(plan.peer_key, r.received, std::span(buf).first(*got));
    if (bad != std::string::npos && r.mismatch == std::string::npos) r.mismatch = bad;
    r.received += *got;
  }
}

task<client_report> client_round(openssl_peer& peer, const tls::context& cctx, const round_plan& plan,
                                 client_progress& progress) {
  client_report r;
  auto sock = co_await with_timeout(stream_socket::connect(peer.address()), 5s);
  if (!sock) {
    r.failure = "connect: " + sock.error().message();
    co_return r;
  }
  if (plan.small_buffers > 0)
    ::setsockopt(sock->native_handle(), SOL_SOCKET, SO_SNDBUF, &plan.small_buffers, sizeof plan.small_buffers);
  auto s = tls::stream::client(cctx, std::move(*sock), "localhost");
  if (!s) {
    r.failure = "client: " + s.error().message();
    co_return r;
  }
  auto hs = co_await s->handshake(5s);
  if (!hs) {
    r.failure = "handshake: " + hs.error().message();
    co_return r;
  }
  const loop_statistics& stats = io_context::current()->stats();
  const auto iterations = stats.iterations, completions = stats.completions;
  const auto begun = clock_type::now();
  std::stop_source stop_writer;
  {
    scope writers(stop_writer.get_token());
    writers.spawn(writer(*s, plan, r, progress));
    scope timers{std::stop_token{}};
    if (plan.client_reset_after_us >= 0) {
      timers.spawn([](tls::stream& s, int us, client_report& r) -> task<void> {
        if (!co_await sleep_for(std::chrono::microseconds(us))) co_return;
        r.reset = true;
        ::shutdown(s.native_handle(), SHUT_RDWR);
      }(*s, plan.client_reset_after_us, r));
    }
    co_await reader(*s, plan, r, begun + end_limit + 2s);
    // The round is over for the client: its writer stops (in time, whatever it waits for).
    const auto stopping = clock_type::now();
    stop_writer.request_stop();
    co_await writers.join();
    r.writer_stop = clock_type::now() - stopping;
    timers.request_stop();
    co_await timers.join();
  }
  r.elapsed = clock_type::now() - begun;
  r.iterations = stats.iterations - iterations;
  r.completions = stats.completions - completions;
  co_return r;  // the stream goes (its socket closes)
}

TEST_P(TlsAdversarial, DeadlinesStopsClosesAndResetsAgainstAnOpenSslPeer) {
  const std::uint64_t seed = test_seed();
  SCOPED_TRACE("RINGIO_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  auto cctx = make_client_context();
  const int rounds = 100;
  int graceful = 0, abortive = 0, cuts = 0, ops = 0;
  std::chrono::nanoseconds latest{0};
  std::uint64_t most_spare_iterations = 0;
  const auto started = clock_type::now();
  for (int round = 0; round < rounds; ++round) {
    const round_plan plan = make_plan(rng);
    const std::uint64_t peer_seed = rng();
    SCOPED_TRACE("round " + std::to_string(round) + ": " + describe(plan));
    peer_report rep;
    std::atomic<bool> peer_returned{false};
    client_progress progress;
    client_report r;
    {
      openssl_peer peer(
          {.tickets = plan.tickets, .max_version = plan.max_version, .receive_buffer = plan.small_buffers},
          [&](openssl_peer& p) {
            run_peer(p, plan, rep, peer_seed, progress);
            peer_returned = true;
          });
      r = run(client_round(peer, cctx, plan, progress));
      peer.open(round_over);
      peer.join_script();
      ASSERT_TRUE(peer.handshake_ok() || !r.failure.empty());
    }
    ASSERT_TRUE(r.failure.empty()) << r.failure;
    ops += r.ops;
    cuts += r.cut;
    latest = std::max(latest, r.latest);

    // Bytes: each side received a prefix of what the other sent, unbroken.
    EXPECT_EQ(r.mismatch, std::string::npos) << "the client received a wrong byte at offset " << r.mismatch;
    EXPECT_EQ(rep.mismatch, std::string::npos) << "the peer received a wrong byte at offset " << rep.mismatch;
    EXPECT_TRUE(rep.read_error.empty()) << "the peer: " << rep.read_error;
    EXPECT_TRUE(!rep.starved || r.reset) << "the peer never got all the bytes the client's sends took (" << rep.received
                                         << " of " << progress.committed.load() << ")";
    EXPECT_LE(r.received, rep.sent);
    EXPECT_LE(rep.received, r.committed);
    // Every byte the peer sent before a graceful end is delivered, then the end itself.
    const bool peer_graceful =
        rep.ended && !rep.write_failed && (plan.end == peer_end::close_notify || plan.end == peer_end::half_close);
    EXPECT_TRUE(r.reader_done || r.reset) << "the client never saw the end of the peer's stream";
    if (peer_graceful && !r.reset) {
      ++graceful;
      EXPECT_EQ(r.received, rep.sent) << "bytes the peer sent before its end were lost";
      if (rep.notify_sent) {
        EXPECT_FALSE(r.end.has_value()) << "a close_notify reads as 0, not " << r.end->message();
      } else {
        EXPECT_TRUE(r.end.has_value()) << "a TCP end without close_notify is not a clean end";
      }
    } else {
      ++abortive;
    }
    // The client's close_notify (after all its writes) reaches a peer that reads.
    if (r.close_notify_sent && !r.reset && plan.reads != peer_reads::never && rep.ended &&
        plan.end != peer_end::reset && plan.end != peer_end::close_unread) {
      EXPECT_EQ(rep.received, r.committed) << "bytes the client's sends took never arrived";
      EXPECT_TRUE(rep.saw_close_notify);
    }
    // Time: no operation much later than its bound; the writer stops at once.
    EXPECT_LT(r.latest, late_slack) << "an operation outlived its deadline or stop by "
                                    << std::chrono::duration_cast<std::chrono::milliseconds>(r.latest).count() << " ms";
    EXPECT_LT(r.writer_stop, late_slack) << "the writer did not stop in time";
    // No spin: every iteration of the loop has a reason (a completion, a timer, a task
    // woken by another); a loop spinning on yield runs about a million a second.
    const std::uint64_t spare = r.iterations > r.completions ? r.iterations - r.completions : 0;
    most_spare_iterations = std::max(most_spare_iterations, spare);
    const auto elapsed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(r.elapsed).count();
    EXPECT_LT(spare, 2000u + 50u * static_cast<std::uint64_t>(elapsed_ms) + 4u * r.completions)
        << r.iterations << " iterations for " << r.completions << " completions in " << elapsed_ms << " ms";
    if (HasFailure()) break;
  }
  std::printf(
      "%d rounds (%d graceful peer ends, %d abortive or with a client reset) in %lld ms; %d client "
      "operations, %d cut by a deadline or stop; latest completion after a bound %lld us; most "
      "iterations beyond completions in a round: %llu\n",
      rounds, graceful, abortive,
      static_cast<long long>(
          std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - started).count()),
      ops, cuts, static_cast<long long>(std::chrono::duration_cast<std::chrono::microseconds>(latest).count()),
      static_cast<unsigned long long>(most_spare_iterations));
}

}  // namespace

RINGIO_ALL_BACKENDS(TlsAdversarial);
