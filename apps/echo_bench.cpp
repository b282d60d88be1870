// SPDX-License-Identifier: Apache-2.0
// echo_bench — request rate and round-trip latency against an echo server: N
// connections, each looping "send L bytes, receive the L bytes back", measured for D
// seconds after an uncounted warm-up that starts once every connection is up.
#include <cstdio>
#include <string>

#include "common/cli.hpp"
#include "common/loadgen.hpp"

namespace {

constexpr const char* usage =
    "usage: echo_bench --port P [--host ADDR] --connections N --length L --duration D\n"
    "                  [--threads T] [--warmup S] [--backend uring|epoll|uring-poll] [--verify]\n"
    "Opens N connections to ADDR:P (default 127.0.0.1) over T loop threads (default 1).\n"
    "Once all are connected, each loops \"send L bytes, receive the L bytes back\". After S\n"
    "seconds of warm-up (default 0, not counted) it measures for D seconds: requests/s and\n"
    "the round-trip latency percentiles (log-linear histogram, 1% precision), failed\n"
    "connections and CPU time per request, then a `RESULT {json}` line. --verify checks\n"
    "every byte that comes back.\n"
    "Exit status: 0 after a run (failures are counted in `errors`), 1 when no connection\n"
    "could be made, 2 for a usage error.\n";

}  // namespace

int main(int argc, char** argv) {
  apps::cli args(argc, argv, usage, {"verify"});
  apps::roundtrip_config cfg;
  cfg.tool = "echo_bench";
  auto port = static_cast<std::uint16_t>(args.required_integer("port", 1, 65535));
  auto host = args.text("host", "127.0.0.1");
  cfg.connections = static_cast<std::size_t>(args.required_integer("connections", 1, 1'000'000));
  cfg.length = static_cast<std::size_t>(args.required_integer("length", 1, 64 << 20));
  if (args.text("duration", "").empty()) args.fail("missing --duration");
  cfg.duration_s = args.seconds("duration", 10, 0.001, 86400);
  cfg.threads = static_cast<unsigned>(args.integer("threads", 1, 1, 1024));
  cfg.warmup_s = args.seconds("warmup", 0, 0, 3600);
  cfg.backend = args.backend();
  cfg.verify = args.flag("verify");
  args.done();
  cfg.address = apps::target_address(args, host, port);
  apps::raise_fd_limit();

  auto r = apps::run_roundtrips(cfg);
  if (!r.started) {
    std::fprintf(stderr, "echo_bench: %s\n", r.first_error.c_str());
    return 1;
  }
  if (r.connected == 0) {
    std::fprintf(stderr, "echo_bench: cannot connect to %s: %s\n", cfg.address.to_string().c_str(),
                 r.first_error.c_str());
    return 1;
  }
  const std::uint64_t errors = r.connect_errors + r.session_errors;
  const double rps = r.seconds > 0 ? static_cast<double>(r.round_trips) / r.seconds : 0;
  const double cpu_us = r.round_trips > 0 ? r.cpu_seconds * 1e6 / static_cast<double>(r.round_trips) : 0;
  const auto& h = *r.latency;
  std::printf(
      "echo_bench: %zu connections on %u thread%s, %zu-byte messages, %s, %.3f s measured after %.3f s warm-up\n",
      cfg.connections, cfg.threads, cfg.threads == 1 ? "" : "s", cfg.length, cfg.address.to_string().c_str(), r.seconds,
      cfg.warmup_s);
  std::printf("echo_bench: %.0f requests/s (%llu requests), %.3f CPU s, %.2f CPU us per request\n", rps,
              static_cast<unsigned long long>(r.round_trips), r.cpu_seconds, cpu_us);
  std::printf("echo_bench: latency us: p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f  (mean %.1f)\n",
              apps::to_us(h.percentile(50)), apps::to_us(h.percentile(90)), apps::to_us(h.percentile(99)),
              apps::to_us(h.percentile(99.9)), apps::to_us(h.max()), h.mean() / 1000.0);
  std::printf("echo_bench: %llu failed connection%s (%llu could not connect, %llu failed while running%s)\n",
              static_cast<unsigned long long>(errors), errors == 1 ? "" : "s",
              static_cast<unsigned long long>(r.connect_errors), static_cast<unsigned long long>(r.session_errors),
              cfg.verify ? (", " + std::to_string(r.verify_errors) + " bad replies").c_str() : "");
  if (errors > 0) std::printf("echo_bench: first error: %s\n", r.first_error.c_str());
  apps::result_json(cfg.tool)
      .add("requests_per_s", rps, 1)
      .add("p50_us", apps::to_us(h.percentile(50)), 1)
      .add("p90_us", apps::to_us(h.percentile(90)), 1)
      .add("p99_us", apps::to_us(h.percentile(99)), 1)
      .add("p999_us", apps::to_us(h.percentile(99.9)), 1)
      .add("max_us", apps::to_us(h.max()), 1)
      .add("mean_us", h.mean() / 1000.0, 1)
      .add("requests", r.round_trips)
      .add("errors", errors)
      .add("connect_errors", r.connect_errors)
      .add("seconds", r.seconds, 4)
      .add("warmup_s", cfg.warmup_s, 3)
      .add("connections", static_cast<std::uint64_t>(cfg.connections))
      .add("length", static_cast<std::uint64_t>(cfg.length))
      .add("threads", cfg.threads)
      .add("cpu_s", r.cpu_seconds, 3)
      .add("cpu_us_per_request", cpu_us, 3)
      .add("verify", cfg.verify)
      .add("backend", r.backend)
      .print();
  return 0;
}
