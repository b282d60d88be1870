// SPDX-License-Identifier: Apache-2.0
// hiredis_bench — GET throughput of N hiredis clients against a redis-server on
// 127.0.0.1, each with one command in flight, for a fixed time:
//   --mode threads  one OS thread per client, hiredis's blocking API
//   --mode async    one thread, hiredis's asynchronous API driven by a ringio loop
//                   (wait_readable / wait_writable)
//   --mode fibers   one thread, a ringio fiber per client running hiredis's blocking API,
//                   made cooperative by the system-call hooks (hiredis_bench_hooked only:
//                   the binary linked with ringio::fiber_hooks)
// The clients connect first; the timed window starts when all have connected. Prints
// one `RESULT {json}` line: GETs, GETs per second, the process's CPU time over the window
// and, with --server-pid, the server's.
#include <async.h>
#include <hiredis.h>
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "ringio/net/wait_ready.hpp"
#include "ringio/ringio.hpp"
#ifdef RINGIO_BENCH_HOOKED
#include "ringio/fiber.hpp"
#endif

using namespace std::chrono_literals;

namespace {

const std::string usage =
    "usage: hiredis_bench --mode M --port P --clients N [options]\n"
    "N hiredis clients GET one key of a redis-server on 127.0.0.1:P, one command in flight\n"
    "each, for --seconds once all have connected; prints RESULT {json}.\n"
    "  --mode M            threads (a thread per client, blocking API), async (one thread,\n"
    "                      the asynchronous API on a ringio loop) or fibers (one thread, a\n"
    "                      fiber per client, blocking API through the hooks: hiredis_bench_hooked)\n"
    "  --seconds S         length of the timed window (default 2)\n"
    "  --server-pid PID    also report that process's CPU time over the window\n"
    "  --backend B         the ringio loop's backend (async, fibers)\n"
    "  --stack-kib N       stack of each thread or fiber (default 256)\n";

constexpr const char* key = "ringio:bench:key";
constexpr const char* value = "0123456789abcdef";  // 16 bytes
constexpr std::size_t value_len = 16;

// What every client shares: the phase (0 connecting, 1 timed, 2 stopping) and the counts.
struct shared_state {
  std::atomic<int> phase{0};
  std::atomic<int> connected{0};
  std::atomic<int> failed{0};
  std::atomic<long> gets{0};
  std::atomic<long> errors{0};
  std::string first_error;  // (written once, by the first failure, on the loop or under the race it tolerates)
  // Threads wait for the start here; fibers poll with a sleep (a hooked usleep waits on
  // the loop), since the hooks take one waiter per descriptor and a condition variable
  // would block the loop.
  std::mutex start_lock;
  std::condition_variable started;
  bool threads = false;

  void wait_for_start() {
    if (!threads) {
      while (phase.load(std::memory_order_relaxed) == 0) ::usleep(1000);
      return;
    }
    std::unique_lock lock(start_lock);
    started.wait(lock, [this] { return phase.load() != 0; });
  }
  void start() {
    {
      std::lock_guard lock(start_lock);
      phase = 1;
    }
    started.notify_all();
  }
};

bool reply_ok(const redisReply* r) {
  return r != nullptr && r->type == REDIS_REPLY_STRING && r->len == static_cast<long>(value_len) &&
         std::memcmp(r->str, value, value_len) == 0;
}

// The loop of one blocking client (threads and fibers): plain hiredis calls.
void blocking_client(int port, shared_state& st) {
  redisContext* c = redisConnect("127.0.0.1", port);
  if (c == nullptr || c->err != 0) {
    if (st.failed.fetch_add(1) == 0) st.first_error = c != nullptr ? c->errstr : "no context";
    if (c != nullptr) redisFree(c);
    return;
  }
  st.connected.fetch_add(1);
  st.wait_for_start();
  long gets = 0;
  long errors = 0;
  while (st.phase.load(std::memory_order_relaxed) == 1) {
    auto* r = static_cast<redisReply*>(redisCommand(c, "GET %s", key));
    if (st.phase.load(std::memory_order_relaxed) == 1) reply_ok(r) ? ++gets : ++errors;
    if (r != nullptr) freeReplyObject(r);
    if (r == nullptr) break;  // the connection is broken
  }
  st.gets.fetch_add(gets);
  st.errors.fetch_add(errors);
  redisFree(c);
}

double process_cpu_s() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// utime + stime of another process, from /proc/PID/stat; nullopt when unreadable.
std::optional<double> other_cpu_s(long pid) {
  if (pid <= 0) return std::nullopt;
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto close_paren = text.rfind(')');
  if (close_paren == std::string::npos) return std::nullopt;
  std::istringstream rest(text.substr(close_paren + 2));
  std::string field;
  double utime = 0;
  double stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {  // field 3 is the state
    if (i == 14) utime = std::stod(field);
    if (i == 15) stime = std::stod(field);
  }
  return (utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// The timed window: its length and the CPU readings at both ends.
struct window {
  std::chrono::steady_clock::time_point t0, t1;
  double cpu0 = 0, cpu1 = 0;
  std::optional<double> server0, server1;
  void begin(long server_pid) {
    cpu0 = process_cpu_s();
    server0 = other_cpu_s(server_pid);
    t0 = std::chrono::steady_clock::now();
  }
  void end(long server_pid) {
    t1 = std::chrono::steady_clock::now();
    cpu1 = process_cpu_s();
    server1 = other_cpu_s(server_pid);
  }
};

// ---- threads ----

void run_threads(int port, int clients, double seconds, long server_pid, std::size_t stack, shared_state& st,
                 window& w) {
  struct arg {
    int port;
    shared_state* st;
  };
  static arg a;
  a = {port, &st};
  st.threads = true;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, stack);
  std::vector<pthread_t> threads;
  for (int i = 0; i < clients; ++i) {
    pthread_t t;
    const int rc = pthread_create(
        &t, &attr,
        [](void* p) -> void* {
          auto* x = static_cast<arg*>(p);
          blocking_client(x->port, *x->st);
          return nullptr;
        },
        &a);
    if (rc != 0) {
      if (st.failed.fetch_add(1) == 0) st.first_error = std::string("pthread_create: ") + std::strerror(rc);
      continue;
    }
    threads.push_back(t);
  }
  pthread_attr_destroy(&attr);
  while (st.connected.load() + st.failed.load() < clients) ::usleep(1000);
  w.begin(server_pid);
  st.start();
  ::usleep(static_cast<useconds_t>(seconds * 1e6));
  st.phase = 2;
  w.end(server_pid);
  for (auto t : threads) pthread_join(t, nullptr);
}

#ifndef RINGIO_BENCH_HOOKED
// ---- async: hiredis's asynchronous API on a ringio loop ----

// One connection: hiredis says which readiness it wants through these hooks; two tasks
// wait for it and call hiredis back.
struct async_client {
  redisAsyncContext* ac = nullptr;
  shared_state* st = nullptr;
  int fd = -1;
  bool reading = false;
  bool writing = false;
  bool connected = false;
  bool in_flight = false;
  long gets = 0;
  long errors = 0;
  ringio::event read_wanted{ringio::event_mode::auto_reset};
  ringio::event write_wanted{ringio::event_mode::auto_reset};

  void attach(redisAsyncContext* c) {
    ac = c;
    fd = c->c.fd;
    c->data = this;
    c->ev.data = this;
    c->ev.addRead = [](void* p) {
      auto* a = static_cast<async_client*>(p);
      if (!a->reading) a->read_wanted.set();
      a->reading = true;
    };
    c->ev.delRead = [](void* p) { static_cast<async_client*>(p)->reading = false; };
    c->ev.addWrite = [](void* p) {
      auto* a = static_cast<async_client*>(p);
      if (!a->writing) a->write_wanted.set();
      a->writing = true;
    };
    c->ev.delWrite = [](void* p) { static_cast<async_client*>(p)->writing = false; };
    c->ev.cleanup = [](void* p) { ringio::forget_descriptor(static_cast<async_client*>(p)->fd); };
  }
};

ringio::task<void> pump_reads(async_client& a) {
  for (;;) {
    if (!a.reading) {
      auto wanted = co_await a.read_wanted.wait();  // (bound: GCC 12, docs/toolchain.md)
      if (!wanted) co_return;
      continue;
    }
    auto ready = co_await ringio::wait_readable(a.fd);
    if (!ready || a.ac == nullptr) co_return;
    redisAsyncHandleRead(a.ac);
  }
}

// Until connected, waits for writability (the connect's completion); then tries the
// write at once, as a socket with room takes it, and waits only when hiredis still
// wants to write afterwards.
ringio::task<void> pump_writes(async_client& a) {
  for (;;) {
    if (!a.writing) {
      auto wanted = co_await a.write_wanted.wait();
      if (!wanted) co_return;
      continue;
    }
    if (a.ac == nullptr) co_return;
    if (a.connected) {
      redisAsyncHandleWrite(a.ac);
      if (!a.writing) continue;
    }
    auto ready = co_await ringio::wait_writable(a.fd);
    if (!ready || a.ac == nullptr) co_return;
    redisAsyncHandleWrite(a.ac);
  }
}

void send_get(async_client& a);

void on_get(redisAsyncContext* ac, void* r, void*) {
  auto& a = *static_cast<async_client*>(ac->data);
  a.in_flight = false;
  if (r == nullptr) return;  // the context is going away
  if (a.st->phase.load(std::memory_order_relaxed) != 1) return;
  reply_ok(static_cast<redisReply*>(r)) ? ++a.gets : ++a.errors;
  send_get(a);
}

void send_get(async_client& a) {
  if (redisAsyncCommand(a.ac, on_get, nullptr, "GET %s", key) == REDIS_OK) a.in_flight = true;
  else ++a.errors;
}

void on_connect(const redisAsyncContext* ac, int status) {
  auto& a = *static_cast<async_client*>(ac->data);
  if (status == REDIS_OK) {
    a.connected = true;
    a.st->connected.fetch_add(1);
  } else {
    if (a.st->failed.fetch_add(1) == 0) a.st->first_error = ac->errstr;
    a.ac = nullptr;  // hiredis frees a context whose connect failed
  }
}

// hiredis frees the context after this (a failed connect, a lost connection, or ours).
void on_disconnect(const redisAsyncContext* ac, int) { static_cast<async_client*>(ac->data)->ac = nullptr; }

ringio::task<void> run_async(int port, int clients, double seconds, long server_pid, shared_state& st, window& w) {
  std::vector<std::unique_ptr<async_client>> conns;
  ringio::scope pumps;
  for (int i = 0; i < clients; ++i) {
    redisAsyncContext* ac = redisAsyncConnect("127.0.0.1", port);
    if (ac == nullptr || ac->err != 0) {
      if (st.failed.fetch_add(1) == 0) st.first_error = ac != nullptr ? ac->errstr : "no context";
      if (ac != nullptr) redisAsyncFree(ac);
      continue;
    }
    auto a = std::make_unique<async_client>();
    a->st = &st;
    a->attach(ac);
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    pumps.spawn(pump_reads(*a));
    pumps.spawn(pump_writes(*a));
    conns.push_back(std::move(a));
  }
  while (st.connected.load() + st.failed.load() < clients) (void)co_await ringio::sleep_for(1ms);
  w.begin(server_pid);
  st.phase = 1;
  for (auto& a : conns)
    if (a->connected) send_get(*a);
  (void)co_await ringio::sleep_for(std::chrono::nanoseconds(static_cast<long long>(seconds * 1e9)));
  st.phase = 2;
  w.end(server_pid);
  // Let the commands in flight come back, then stop the pumps and free the contexts.
  for (int i = 0; i < 5000; ++i) {
    bool any = false;
    for (auto& a : conns) any = any || a->in_flight;
    if (!any) break;
    (void)co_await ringio::sleep_for(1ms);
  }
  pumps.request_stop();
  co_await pumps.join();
  for (auto& a : conns) {
    st.gets += a->gets;
    st.errors += a->errors;
    if (a->ac != nullptr) redisAsyncFree(a->ac);  // closes the descriptor (cleanup tells ringio)
  }
}

#endif

#ifdef RINGIO_BENCH_HOOKED
// ---- fibers: the blocking client on hooked fibers ----

ringio::task<void> run_fibers(int port, int clients, double seconds, long server_pid, std::size_t stack,
                              shared_state& st, window& w) {
  ringio::scope fibers;
  for (int i = 0; i < clients; ++i)
    ringio::spawn_fiber(
        fibers, [port, &st] { blocking_client(port, st); }, ringio::fiber_options{.stack_size = stack});
  while (st.connected.load() + st.failed.load() < clients) (void)co_await ringio::sleep_for(1ms);
  w.begin(server_pid);
  st.phase = 1;
  (void)co_await ringio::sleep_for(std::chrono::nanoseconds(static_cast<long long>(seconds * 1e9)));
  st.phase = 2;
  w.end(server_pid);
  co_await fibers.join();
}
#endif

// SET the key once, with a plain blocking connection (outside any fiber); false on failure.
bool set_key(int port) {
  redisContext* c = redisConnect("127.0.0.1", port);
  if (c == nullptr || c->err != 0) {
    std::fprintf(stderr, "hiredis_bench: cannot connect to 127.0.0.1:%d: %s\n", port,
                 c != nullptr ? c->errstr : "no context");
    if (c != nullptr) redisFree(c);
    return false;
  }
  auto* r = static_cast<redisReply*>(redisCommand(c, "SET %s %s", key, value));
  const bool ok = r != nullptr && r->type == REDIS_REPLY_STATUS;
  if (!ok) std::fprintf(stderr, "hiredis_bench: SET failed: %s\n", r == nullptr ? c->errstr : "unexpected reply");
  if (r != nullptr) freeReplyObject(r);
  redisFree(c);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  apps::cli args(argc, argv, usage);
  const std::string mode = args.text("mode", "");
  const auto port = static_cast<int>(args.required_integer("port", 1, 65535));
  const auto clients = static_cast<int>(args.required_integer("clients", 1, 100000));
  const double seconds = args.seconds("seconds", 2, 0.01, 3600);
  const long server_pid = static_cast<long>(args.integer("server-pid", 0, 0, 1 << 30));
  const auto backend = args.backend();
  const auto stack = static_cast<std::size_t>(args.integer("stack-kib", 256, 64, 64 * 1024)) * 1024;
#ifdef RINGIO_BENCH_HOOKED
  if (mode != "fibers") args.fail("hiredis_bench_hooked runs --mode fibers only (hiredis_bench: threads, async)");
#else
  if (mode == "fibers") args.fail("--mode fibers needs the hooks: run hiredis_bench_hooked");
  if (mode != "threads" && mode != "async") args.fail("--mode must be threads, async or fibers, got '" + mode + "'");
#endif
  args.done();
  apps::raise_fd_limit();
  if (!set_key(port)) return 1;
  shared_state st;
  window w;
  std::string backend_line = "-";
  try {
    if (mode == "threads") {
      run_threads(port, clients, seconds, server_pid, stack, st, w);
    } else {
      ringio::io_context ctx(apps::context_options(backend));
      backend_line = ctx.describe();
#ifdef RINGIO_BENCH_HOOKED
      ringio::sync_wait(ctx, run_fibers(port, clients, seconds, server_pid, stack, st, w));
#else
      ringio::sync_wait(ctx, run_async(port, clients, seconds, server_pid, st, w));
#endif
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hiredis_bench: %s\n", e.what());
    return 1;
  }
  if (st.connected.load() == 0) {
    std::fprintf(stderr, "hiredis_bench: no client connected: %s\n", st.first_error.c_str());
    return 1;
  }
  const double secs = std::chrono::duration<double>(w.t1 - w.t0).count();
  const long gets = st.gets.load();
  const double cpu = w.cpu1 - w.cpu0;
  std::string server = "null";
  if (w.server0 && w.server1) server = std::to_string(*w.server1 - *w.server0);
  std::printf(
      "RESULT {\"mode\": \"%s\", \"clients\": %d, \"connected\": %d, \"failed_connections\": %d, \"gets\": %ld, "
      "\"errors\": %ld, \"seconds\": %.6f, \"gets_per_s\": %.1f, \"cpu_s\": %.4f, \"cpu_us_per_get\": %.4f, "
      "\"server_cpu_s\": %s, \"backend\": \"%s\"}\n",
      mode.c_str(), clients, st.connected.load(), st.failed.load(), gets, st.errors.load(), secs,
      secs > 0 ? static_cast<double>(gets) / secs : 0.0, cpu, gets > 0 ? cpu * 1e6 / static_cast<double>(gets) : 0.0,
      server.c_str(), backend_line.c_str());
  if (st.failed.load() > 0) std::fprintf(stderr, "hiredis_bench: first failure: %s\n", st.first_error.c_str());
  return 0;
}
