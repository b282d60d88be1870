// SPDX-License-Identifier: Apache-2.0
// ping — the ping/pong throughput client: <sessions> connections spread over <threads>
// loop threads; each sends a block, reads the whole block back, and repeats. The clock
// starts once every session is connected and stops at the timeout.
#include <chrono>
#include <cstdio>
#include <string>

#include "common/cli.hpp"
#include "common/loadgen.hpp"

namespace {

constexpr const char* usage =
    "usage: ping <port> <threads> <blocksize> <sessions> <timeout(s)>\n"
    "            [--host ADDR] [--backend uring|epoll|uring-poll] [--verify]\n"
    "            [--senders | --when-any [--op-timeout MS]]\n"
    "Opens <sessions> connections to ADDR:<port> (default 127.0.0.1) over <threads> loop\n"
    "threads. Once all are connected, each one loops \"send <blocksize> bytes, receive all\n"
    "<blocksize> bytes back\" for <timeout> seconds (a decimal: 0.25). Prints the throughput in GiB/s (bytes\n"
    "received back / measured seconds), round trips and failed sessions, then a\n"
    "`RESULT {json}` line. --verify checks every byte that comes back.\n"
    "--senders runs every send and receive as a sender (ringio/exec.hpp) awaited by the\n"
    "session; --when-any races each of them against a timer with exec::when_any\n"
    "(per-operation cancellation; --op-timeout, default 10000 ms, counts as an error).\n"
    "Exit status: 0 after a run (failures are counted in `errors`), 1 when no session\n"
    "could connect, 2 for a usage error.\n";

}  // namespace

int main(int argc, char** argv) {
  apps::cli args(argc, argv, usage, {"verify", "senders", "when-any"});
  apps::roundtrip_config cfg;
  cfg.tool = "ping";
  auto port = static_cast<std::uint16_t>(args.positional_integer(0, "port", 1, 65535));
  cfg.threads = static_cast<unsigned>(args.positional_integer(1, "threads", 1, 1024));
  cfg.length = static_cast<std::size_t>(args.positional_integer(2, "blocksize", 1, 64 << 20));
  cfg.connections = static_cast<std::size_t>(args.positional_integer(3, "sessions", 1, 1'000'000));
  cfg.duration_s = args.positional_seconds(4, "timeout(s)", 0.05, 86400);
  auto host = args.text("host", "127.0.0.1");
  cfg.backend = args.backend();
  cfg.verify = args.flag("verify");
  const bool senders = args.flag("senders");
  const bool when_any = args.flag("when-any");
  if (senders && when_any) args.fail("--senders and --when-any exclude each other");
  const auto op_timeout_ms = args.integer("op-timeout", 10000, 1, 86'400'000);
  if (!when_any && op_timeout_ms != 10000) args.fail("--op-timeout needs --when-any");
  cfg.op_timeout = std::chrono::milliseconds(op_timeout_ms);
  using mode = apps::roundtrip_config::client_mode;
  cfg.mode = when_any ? mode::when_any : senders ? mode::senders : mode::tasks;
  args.done(5);
  cfg.address = apps::target_address(args, host, port);
  apps::raise_fd_limit();

  auto r = apps::run_roundtrips(cfg);
  if (!r.started) {
    std::fprintf(stderr, "ping: %s\n", r.first_error.c_str());
    return 1;
  }
  if (r.connected == 0) {
    std::fprintf(stderr, "ping: cannot connect to %s: %s\n", cfg.address.to_string().c_str(), r.first_error.c_str());
    return 1;
  }
  const std::uint64_t errors = r.connect_errors + r.session_errors;
  const double gib = static_cast<double>(r.bytes) / (1024.0 * 1024.0 * 1024.0);
  const double gib_per_s = r.seconds > 0 ? gib / r.seconds : 0;
  std::printf("ping: %zu sessions on %u thread%s, %zu-byte blocks, %s\n", cfg.connections, cfg.threads,
              cfg.threads == 1 ? "" : "s", cfg.length, cfg.address.to_string().c_str());
  std::printf("ping: %.3f GiB/s: %llu bytes received back in %.3f s, %llu round trips\n", gib_per_s,
              static_cast<unsigned long long>(r.bytes), r.seconds, static_cast<unsigned long long>(r.round_trips));
  std::printf("ping: %llu error%s (%llu could not connect, %llu failed while running%s)\n",
              static_cast<unsigned long long>(errors), errors == 1 ? "" : "s",
              static_cast<unsigned long long>(r.connect_errors), static_cast<unsigned long long>(r.session_errors),
              cfg.verify ? (", " + std::to_string(r.verify_errors) + " bad replies").c_str() : "");
  if (errors > 0) std::printf("ping: first error: %s\n", r.first_error.c_str());
  apps::result_json(cfg.tool)
      .add("gib_per_s", gib_per_s, 4)
      .add("bytes", r.bytes)
      .add("round_trips", r.round_trips)
      .add("seconds", r.seconds, 4)
      .add("errors", errors)
      .add("connect_errors", r.connect_errors)
      .add("threads", cfg.threads)
      .add("sessions", static_cast<std::uint64_t>(cfg.connections))
      .add("blocksize", static_cast<std::uint64_t>(cfg.length))
      .add("timeout_s", cfg.duration_s, 3)
      .add("cpu_s", r.cpu_seconds, 3)
      .add("verify", cfg.verify)
      .add("backend", r.backend)
      .add("client", when_any  ? "when_any"
                     : senders ? "senders"
                               : "tasks")
      .print();
  return 0;
}
