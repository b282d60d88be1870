// SPDX-License-Identifier: Apache-2.0
// pong — the ping/pong server: every connection loops "receive exactly <blocksize>
// bytes, send them back" until the client closes. One run serves one ping run: once
// <sessions> sessions have connected and all of them have closed, pong exits 0.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>

#include "common/cli.hpp"
#include "common/loadgen.hpp"
#include "common/pool_flags.hpp"
#include "common/serve.hpp"
#include "ringio/exec.hpp"
#include "ringio/net/buffer_pool.hpp"
#include "ringio/net/multishot_receiver.hpp"
#include "ringio/net/stream_socket.hpp"

namespace {

const std::string usage =
    std::string(
        "usage: pong <port> <threads> <blocksize> <sessions> [--keep-running] [options]\n"
        "Listens on --host:<port> (default 127.0.0.1) on <threads> loop threads. Every connection\n"
        "loops \"receive exactly <blocksize> bytes, send them back\" until the client closes.\n"
        "Exits 0 once <sessions> sessions have connected and all have closed (--keep-running:\n"
        "serve until signalled), or on SIGINT/SIGTERM (graceful).\n"
        "options:\n"
        "  --recv MODE              multishot (default: one armed recv per connection into\n"
        "                           buffers shared by the thread; a block that arrives whole\n"
        "                           is sent from there, pieces are gathered in the session's\n"
        "                           block) or single (recv straight into the block until full)\n"
        "  --senders                each session is a sender loop (ringio/exec.hpp):\n"
        "                           repeat_until(recv_exact | let_value(send_all)); implies\n"
        "                           --recv single\n"
        "  --reply MODE             multishot: blocks (default: a whole block goes back once\n"
        "                           it has arrived) or arrivals (every arrival goes back at\n"
        "                           once, from the pool buffer it came in)\n"
        "  --pool-buffers N         multishot: receive buffers per thread (default 4096)\n") +
    apps::pool_flags_usage + apps::server_options_usage;

struct pong_state {
  std::size_t block = 0;
  bool reply_arrivals = false;  // --reply arrivals
  std::int64_t sessions = 0;
  bool keep_running = false;
  std::atomic<std::int64_t> accepted{0};
  std::atomic<std::int64_t> closed{0};
  std::atomic<std::uint64_t> bytes{0};
  std::stop_source finished;  // requested when the sessions are over
};

pong_state st;
thread_local ringio::buffer_pool* loop_pool = nullptr;

void session_ended(std::uint64_t echoed) {
  st.bytes.fetch_add(echoed, std::memory_order_relaxed);
  const std::int64_t closed = st.closed.fetch_add(1) + 1;
  if (!st.keep_running && closed >= st.sessions && closed == st.accepted.load()) st.finished.request_stop();
}

// recv straight into the block until it is full, then send it back.
ringio::task<void> pong_single(ringio::stream_socket s) {
  st.accepted.fetch_add(1);
  auto storage = std::make_unique<std::byte[]>(st.block);  // once per session
  const ringio::mutable_buffer block(storage.get(), st.block);
  std::uint64_t echoed = 0;
  for (;;) {
    auto got = co_await s.recv_exact(block);
    if (!got || *got != st.block) break;  // EOF (maybe mid-block), error or cancel
    auto sent = co_await s.send_all(block);
    if (!sent || *sent != block.size()) break;
    echoed += st.block;
  }
  s = ringio::stream_socket{};
  session_ended(echoed);
}

// The single mode written with senders: one loop of recv_exact then send_all,
// awaited by the connection's task (whose stop token reaches every operation).
ringio::task<void> pong_senders(ringio::stream_socket s) {
  namespace ex = ringio::exec;
  st.accepted.fetch_add(1);
  auto storage = std::make_unique<std::byte[]>(st.block);
  const ringio::mutable_buffer block(storage.get(), st.block);
  std::uint64_t echoed = 0;
  auto loop = ex::repeat_until([&] {
    return ex::recv_exact(s, block) | ex::let_value([&](std::size_t got) {
             // A short block (EOF) sends nothing and ends the loop.
             return ex::send_all(s, block.first(got == st.block ? got : 0)) | ex::then([&, got](std::size_t sent) {
                      if (got != st.block || sent != st.block) return true;
                      echoed += st.block;
                      return false;
                    });
           });
  });
  auto ended = co_await std::move(loop);
  (void)ended;  // an error or a stop ends the session like EOF
  s = ringio::stream_socket{};
  session_ended(echoed);
}

// One armed multishot recv; a whole block that arrives in one pool buffer is sent from
// there, pieces are gathered in the session's block and sent when it is full.
ringio::task<void> pong_multishot(ringio::stream_socket s) {
  st.accepted.fetch_add(1);
  auto storage = std::make_unique<std::byte[]>(st.block);
  std::size_t filled = 0;
  std::uint64_t echoed = 0;
  {
    ringio::multishot_receiver rx(s, *loop_pool);
    bool open = true;
    while (open) {
      auto chunk = co_await rx.next();
      if (!chunk || chunk->empty()) break;
      if (st.reply_arrivals) {  // the bytes go back as they came, from the pool buffer
        auto sent = co_await s.send_all(ringio::const_buffer(chunk->data(), chunk->size()));
        if (!sent || *sent != chunk->size()) break;
        echoed += chunk->size();
        continue;
      }
      std::size_t used = 0;
      while (used < chunk->size()) {
        const std::byte* block = nullptr;
        if (filled == 0 && chunk->size() - used >= st.block) {
          block = chunk->data() + used;  // a whole block in the pool buffer: no copy
          used += st.block;
        } else {
          std::size_t n = std::min(chunk->size() - used, st.block - filled);
          std::memcpy(storage.get() + filled, chunk->data() + used, n);
          used += n;
          filled += n;
          if (filled < st.block) continue;
          block = storage.get();
          filled = 0;
        }
        auto sent = co_await s.send_all(ringio::const_buffer(block, st.block));
        if (!sent || *sent != st.block) {
          open = false;
          break;
        }
        echoed += st.block;
      }
    }
  }
  s = ringio::stream_socket{};
  session_ended(echoed);
}

}  // namespace

int main(int argc, char** argv) {
  apps::cli args(argc, argv, usage, apps::server_flags({"keep-running", "senders"}));
  auto port = static_cast<std::uint16_t>(args.positional_integer(0, "port", 0, 65535));
  auto threads = static_cast<unsigned>(args.positional_integer(1, "threads", 1, 1024));
  st.block = static_cast<std::size_t>(args.positional_integer(2, "blocksize", 1, 64 << 20));
  st.sessions = args.positional_integer(3, "sessions", 1, 1'000'000'000);
  st.keep_running = args.flag("keep-running");
  const bool senders = args.flag("senders");
  auto recv_mode = args.text("recv", senders ? "single" : "multishot");
  const auto reply = args.text("reply", "blocks");
  if (reply != "blocks" && reply != "arrivals") args.fail("--reply must be blocks or arrivals, got '" + reply + "'");
  st.reply_arrivals = reply == "arrivals";
  const auto pool_buffers = static_cast<unsigned>(args.integer("pool-buffers", 4096, 1, 32768));
  if (recv_mode != "single" && recv_mode != "multishot")
    args.fail("--recv must be single or multishot, got '" + recv_mode + "'");
  if (senders && recv_mode != "single") args.fail("--senders runs the single receive mode only");
  const ringio::buffer_pool_options pool_options = apps::read_pool_flags(args);
  apps::server_config cfg;
  cfg.name = "pong";
  apps::read_server_options(args, cfg, port, threads);
  args.done(4);

  cfg.banner =
      std::to_string(st.block) + "-byte blocks, " +
      (st.keep_running ? std::string("until signalled") : "until " + std::to_string(st.sessions) + " sessions end");
  std::string backend_name;
  std::once_flag named;
  cfg.options.loop_setup = [&](ringio::io_context& ctx, unsigned) -> std::shared_ptr<void> {
    std::call_once(named, [&] { backend_name = std::string(ringio::to_string(ctx.backend())); });
    if (recv_mode == "single") return nullptr;
    auto pool = std::make_shared<ringio::buffer_pool>(ctx, pool_buffers, 16384, pool_options);
    loop_pool = pool.get();
    return pool;
  };
  ringio::serve_summary summary;
  int status = apps::run_server(cfg,
                                senders                 ? ringio::connection_handler(pong_senders)
                                : recv_mode == "single" ? ringio::connection_handler(pong_single)
                                                        : ringio::connection_handler(pong_multishot),
                                st.finished.get_token(), &summary);
  const int signo = summary.signal_number;

  const auto sessions = st.accepted.load();
  const auto bytes = st.bytes.load();
  std::printf("pong: %lld session%s served, %llu bytes echoed, %s\n", static_cast<long long>(sessions),
              sessions == 1 ? "" : "s", static_cast<unsigned long long>(bytes),
              signo != 0 ? "stopped by a signal" : "all sessions ended");
  apps::result_json("pong")
      .add("sessions", sessions)
      .add("bytes", static_cast<std::uint64_t>(bytes))
      .add("threads", threads)
      .add("blocksize", static_cast<std::uint64_t>(st.block))
      .add("signalled", signo != 0)
      .add("backend", backend_name)
      .print();
  return status;
}
