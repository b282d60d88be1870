// SPDX-License-Identifier: Apache-2.0
#include "common/loadgen.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "ringio/exec.hpp"
#include "ringio/io_context.hpp"
#include "ringio/net/stream_socket.hpp"
#include "ringio/runtime.hpp"
#include "ringio/scope.hpp"
#include "ringio/time/sleep.hpp"
#include "ringio/time/timeout.hpp"

namespace apps {

// ---------------------------------------------------------------- small helpers

ringio::socket_address target_address(cli& args, const std::string& host, std::uint16_t port) {
  auto addr = ringio::socket_address::from_host(host, port);
  if (!addr) args.fail("invalid --host '" + host + "' (a numeric IPv4 or IPv6 address): " + addr.error().message());
  return *addr;
}

namespace {
std::size_t ephemeral_port_count() {
  unsigned lo = 32768, hi = 60999;  // the kernel's default range
  if (FILE* f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    if (std::fscanf(f, "%u %u", &lo, &hi) != 2) lo = 32768, hi = 60999;
    std::fclose(f);
  }
  return hi >= lo ? hi - lo + 1 : 0;
}
}  // namespace

std::vector<ringio::socket_address> loopback_sources(const ringio::socket_address& to, std::size_t connections) {
  std::vector<ringio::socket_address> out;
  if (!to.is_ipv4()) return out;
  const auto* in = reinterpret_cast<const sockaddr_in*>(to.native());
  if ((ntohl(in->sin_addr.s_addr) >> 24) != 127) return out;
  const std::size_t per_source = std::max<std::size_t>(1, ephemeral_port_count() * 3 / 4);
  if (connections <= per_source) return out;
  const std::size_t n = std::min<std::size_t>((connections + per_source - 1) / per_source, 250);
  for (std::size_t k = 1; k <= n; ++k) {
    auto a = ringio::socket_address::parse("127.0.0." + std::to_string(k) + ":0");
    if (a) out.push_back(*a);
  }
  return out;
}

double process_cpu_seconds() noexcept {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto tv = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return tv(u.ru_utime) + tv(u.ru_stime);
}

void fill_payload(std::byte* p, std::size_t len, std::uint64_t seed) noexcept {
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
  for (std::size_t i = 0; i < len; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    p[i] = static_cast<std::byte>(x >> 56);
  }
}

void stamp_payload(std::byte* p, std::size_t len, std::uint64_t seq) noexcept {
  std::memcpy(p, &seq, std::min<std::size_t>(len, sizeof seq));
  if (len >= 2 * sizeof seq) std::memcpy(p + len - sizeof seq, &seq, sizeof seq);
}

// ---------------------------------------------------------------- RESULT line

result_json::result_json(std::string_view tool) : text_("{") { add("tool", tool); }

void result_json::key(std::string_view k) {
  if (text_.size() > 1) text_ += ',';
  text_ += '"';
  text_ += k;
  text_ += "\":";
}

result_json& result_json::add(std::string_view k, double value, int decimals) {
  key(k);
  if (!std::isfinite(value)) value = 0;  // JSON has no NaN or infinity
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  text_ += buf;
  return *this;
}

result_json& result_json::add(std::string_view k, std::uint64_t value) {
  key(k);
  text_ += std::to_string(value);
  return *this;
}

result_json& result_json::add(std::string_view k, std::int64_t value) {
  key(k);
  text_ += std::to_string(value);
  return *this;
}

result_json& result_json::add(std::string_view k, bool value) {
  key(k);
  text_ += value ? "true" : "false";
  return *this;
}

result_json& result_json::add(std::string_view k, std::string_view value) {
  key(k);
  text_ += '"';
  for (char c : value) {
    if (c == '"' || c == '\\') {
      text_ += '\\';
      text_ += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      text_ += buf;
    } else {
      text_ += c;
    }
  }
  text_ += '"';
  return *this;
}

void result_json::print() const {
  std::printf("RESULT %s}\n", text_.c_str());
  std::fflush(stdout);
}

// ---------------------------------------------------------------- round-trip engine
namespace {

using steady = std::chrono::steady_clock;

std::int64_t now_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);  // the clock of steady_clock, without the ratio
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}
steady::time_point from_ns(std::int64_t ns) noexcept { return steady::time_point(std::chrono::nanoseconds(ns)); }

/// A page-aligned, pre-faulted block of bytes, allocated once.
struct byte_slab {
  struct freer {
    void operator()(std::byte* p) const noexcept { std::free(p); }
  };
  std::unique_ptr<std::byte[], freer> p;
  void allocate(std::size_t n) {
    std::size_t rounded = (std::max<std::size_t>(n, 1) + 4095) / 4096 * 4096;
    p.reset(static_cast<std::byte*>(std::aligned_alloc(4096, rounded)));
    if (!p) throw std::bad_alloc();
    std::memset(p.get(), 0, rounded);  // fault the pages in now, not during the run
  }
};

struct alignas(64) thread_state {
  unsigned index = 0;
  std::vector<ringio::stream_socket> sockets;
  byte_slab recv;  // one block per session
  byte_slab send;  // one block per session with --verify, else one shared read-only block
  latency_histogram latency;
  std::uint64_t connect_errors = 0;
  std::uint64_t session_errors = 0;
  std::uint64_t verify_errors = 0;
  std::uint64_t round_trips = 0;
  std::int64_t end_ns = 0;  // when the last session of this thread finished
  std::string first_error;

  void note_error(const char* what, const std::string& why) {
    if (first_error.empty()) first_error = std::string(what) + ": " + why;
  }
};

ringio::task<void> connect_worker(const roundtrip_config& cfg, thread_state& st, std::size_t& next) {
  while (next < st.sockets.size()) {
    const std::size_t i = next++;
    ringio::socket_address from;  // empty: the kernel chooses
    if (!cfg.sources.empty()) from = cfg.sources[(i + st.index) % cfg.sources.size()];
    auto s = co_await ringio::with_timeout(ringio::stream_socket::connect(cfg.address, from), cfg.connect_timeout);
    if (s) {
      st.sockets[i] = std::move(*s);
    } else {
      ++st.connect_errors;
      st.note_error("connect", s.error().message());
    }
  }
}

ringio::task<void> connect_all(const roundtrip_config& cfg, thread_state& st) {
  std::size_t next = 0;
  ringio::scope workers;
  const std::size_t n = std::min<std::size_t>(cfg.connect_parallel, st.sockets.size());
  for (std::size_t k = 0; k < n; ++k) workers.spawn(connect_worker(cfg, st, next));
  co_await workers.join();
}

// One connection's loop: the frame, its buffers and its socket are set up once; a
// round trip is two operations and two clock reads.
ringio::task<void> session(const roundtrip_config& cfg, thread_state& st, std::size_t i, std::int64_t window_start,
                           std::int64_t window_end) {
  ringio::stream_socket& s = st.sockets[i];
  const std::size_t len = cfg.length;
  std::byte* in = st.recv.p.get() + i * len;
  std::byte* out = cfg.verify ? st.send.p.get() + i * len : st.send.p.get();
  std::uint64_t seq = 0;
  for (;;) {
    if (cfg.verify) stamp_payload(out, len, seq);
    const std::int64_t t0 = now_ns();
    ringio::result<std::size_t> sent{0};
    const ringio::const_buffer out_block(out, len);
    if (cfg.mode == roundtrip_config::client_mode::tasks) {
      auto r = co_await s.send_all(out_block);
      sent = r;
    } else if (cfg.mode == roundtrip_config::client_mode::senders) {
      auto r = co_await ringio::exec::send_all(s, out_block);
      sent = r;
    } else {
      auto r = co_await ringio::exec::when_any(ringio::exec::send_all(s, out_block),
                                               ringio::exec::fail_after(cfg.op_timeout));
      sent = r;
    }
    if (!sent || *sent != len) {  // a short count: stopped part-way
      if (!sent && sent.error() != std::errc::operation_canceled) {
        ++st.session_errors;
        st.note_error("send", sent.error().message());
      }
      break;
    }
    ringio::result<std::size_t> got{0};
    const ringio::mutable_buffer in_block(in, len);
    if (cfg.mode == roundtrip_config::client_mode::tasks) {
      auto r = co_await s.recv_exact(in_block);
      got = r;
    } else if (cfg.mode == roundtrip_config::client_mode::senders) {
      auto r = co_await ringio::exec::recv_exact(s, in_block);
      got = r;
    } else {
      auto r = co_await ringio::exec::when_any(ringio::exec::recv_exact(s, in_block),
                                               ringio::exec::fail_after(cfg.op_timeout));
      got = r;
    }
    if (!got) {
      if (got.error() != std::errc::operation_canceled) {
        ++st.session_errors;
        st.note_error("recv", got.error().message());
      }
      break;
    }
    if (*got != len) {
      std::stop_token stop = co_await ringio::current_stop_token();
      if (stop.stop_requested()) break;  // stopped part-way: not the server's doing
      ++st.session_errors;
      st.note_error("recv", "the server closed the connection after " + std::to_string(*got) + " of " +
                                std::to_string(len) + " bytes");
      break;
    }
    const std::int64_t t1 = now_ns();
    if (cfg.verify && std::memcmp(in, out, len) != 0) {
      ++st.session_errors;
      ++st.verify_errors;
      st.note_error("verify", "round trip " + std::to_string(seq) + " came back with different bytes");
      break;
    }
    if (t1 >= window_start && t1 < window_end) {
      ++st.round_trips;
      st.latency.record(static_cast<std::uint64_t>(t1 - t0));
    }
    ++seq;
  }
  s = ringio::stream_socket{};  // close now: the server sees the end at once
}

ringio::task<void> stop_at(ringio::scope& sessions, std::int64_t when) {
  auto fired = co_await ringio::sleep_until(from_ns(when));  // bound first: docs/toolchain.md
  if (fired) sessions.request_stop();
}

ringio::task<void> run_sessions(const roundtrip_config& cfg, thread_state& st, std::int64_t window_start,
                                std::int64_t window_end) {
  ringio::scope sessions;
  for (std::size_t i = 0; i < st.sockets.size(); ++i)
    if (st.sockets[i].is_open()) sessions.spawn(session(cfg, st, i, window_start, window_end));
  ringio::scope timer;
  timer.spawn(stop_at(sessions, window_end));
  co_await sessions.join();
  st.end_ns = now_ns();
  timer.request_stop();
  co_await timer.join();
}

// Samples the process's CPU time at the start and the end of the window (or earlier,
// when every session ended before the window did).
class cpu_sampler {
 public:
  cpu_sampler(std::int64_t start, std::int64_t end)
      : thread_([this, start, end] {
          std::unique_lock lk(mu_);
          cv_.wait_until(lk, from_ns(start), [&] { return finished_; });
          begin_ = process_cpu_seconds();
          cv_.wait_until(lk, from_ns(end), [&] { return finished_; });
          end_ = process_cpu_seconds();
        }) {}
  /// Stops sampling (at once if the window is not over) and returns the CPU seconds.
  double finish() {
    {
      std::lock_guard lk(mu_);
      finished_ = true;
    }
    cv_.notify_all();
    thread_.join();
    return end_ - begin_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool finished_ = false;
  double begin_ = 0, end_ = 0;
  std::thread thread_;
};

}  // namespace

roundtrip_report run_roundtrips(const roundtrip_config& given) {
  roundtrip_config cfg = given;
  if (cfg.sources.empty()) {
    cfg.sources = loopback_sources(cfg.address, cfg.connections);
    if (!cfg.sources.empty())
      std::printf(
          "%s: %zu connections exceed one source address's ephemeral ports; spreading them over "
          "127.0.0.1-127.0.0.%zu\n",
          cfg.tool.c_str(), cfg.connections, cfg.sources.size());
  }
  roundtrip_report report;
  const unsigned threads = std::max(1u, cfg.threads);

  std::vector<std::unique_ptr<thread_state>> states;
  for (unsigned t = 0; t < threads; ++t) {
    auto st = std::make_unique<thread_state>();
    st->index = t;
    const std::size_t n = share_of(cfg.connections, threads, t);
    st->sockets.resize(n);
    st->recv.allocate(n * cfg.length);
    st->send.allocate(cfg.verify ? n * cfg.length : cfg.length);
    if (cfg.verify) {
      for (std::size_t i = 0; i < n; ++i)
        fill_payload(st->send.p.get() + i * cfg.length, cfg.length, (std::uint64_t{t} << 32) | i);
    } else {
      fill_payload(st->send.p.get(), cfg.length, t);
    }
    states.push_back(std::move(st));
  }

  std::unique_ptr<ringio::runtime> rt;
  try {
    ringio::runtime_options ro;
    ro.threads = threads;
    ro.context = context_options(cfg.backend);
    rt = std::make_unique<ringio::runtime>(ro);
  } catch (const std::exception& e) {
    report.first_error = e.what();
    return report;
  }
  report.started = true;
  report.backend = std::string(ringio::to_string(rt->context(0).backend()));
  report.backend_line = rt->context(0).describe();
  std::printf("%s: backend %s\n", cfg.tool.c_str(), report.backend_line.c_str());
  std::fflush(stdout);

  // Phase 1: every connection, on its own thread. Not measured.
  rt->run_on_each([&](ringio::io_context&, unsigned t) { return connect_all(cfg, *states[t]); });
  for (auto& st : states) {
    report.connect_errors += st->connect_errors;
    for (auto& s : st->sockets) report.connected += s.is_open() ? 1 : 0;
  }

  // Phase 2: the load. The window is fixed now that every connection is up.
  if (report.connected > 0) {
    const std::int64_t window_start = now_ns() + static_cast<std::int64_t>(cfg.warmup_s * 1e9);
    const std::int64_t window_end = window_start + static_cast<std::int64_t>(cfg.duration_s * 1e9);
    cpu_sampler cpu(window_start, window_end);
    rt->run_on_each(
        [&](ringio::io_context&, unsigned t) { return run_sessions(cfg, *states[t], window_start, window_end); });
    report.cpu_seconds = cpu.finish();
    std::int64_t last_end = 0;
    for (auto& st : states) last_end = std::max(last_end, st->end_ns);
    report.seconds =
        static_cast<double>(std::max<std::int64_t>(0, std::min(last_end, window_end) - window_start)) / 1e9;
  }
  rt->stop();

  for (auto& st : states) {
    report.session_errors += st->session_errors;
    report.verify_errors += st->verify_errors;
    report.round_trips += st->round_trips;
    report.latency->merge(st->latency);
    if (report.first_error.empty()) report.first_error = st->first_error;
  }
  report.bytes = report.round_trips * cfg.length;
  return report;
}

}  // namespace apps
