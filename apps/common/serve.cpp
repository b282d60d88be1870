// SPDX-License-Identifier: Apache-2.0
#include "common/serve.hpp"

#include <unistd.h>

#include <cstdio>
#include <exception>
#include <string>
#include <utility>

#include "common/cli.hpp"
#include "common/metrics_endpoint.hpp"
#include "ringio/io_context.hpp"
#include "ringio/log.hpp"
#include "ringio/runtime.hpp"

namespace apps {

std::set<std::string> server_flags(std::set<std::string> extra) {
  extra.insert({"single-accept", "sqpoll", "no-defer-taskrun", "direct-fds"});
  return extra;
}

void read_server_options(cli& args, server_config& cfg) {
  auto port = static_cast<std::uint16_t>(args.required_integer("port", 0, 65535));
  auto threads = static_cast<unsigned>(args.integer("threads", 1, 1, 1024));
  read_server_options(args, cfg, port, threads);
}

void read_server_options(cli& args, server_config& cfg, std::uint16_t port, unsigned threads) {
  auto host = args.text("host", "127.0.0.1");
  auto addr = ringio::socket_address::from_host(host, port);
  if (!addr) args.fail("invalid --host '" + host + "': " + addr.error().message());
  cfg.address = *addr;
  ringio::serve_options& o = cfg.options;
  o.threads = threads;
  o.context = context_options(args.backend());
  o.context.sqpoll = args.flag("sqpoll");
  o.context.defer_taskrun = !args.flag("no-defer-taskrun");
  o.context.zero_copy_send_threshold = static_cast<std::size_t>(args.integer("send-zc", 0, 0, std::int64_t{1} << 40));
  o.context.min_wait = static_cast<unsigned>(args.integer("min-wait", 0, 0, 10'000'000));
  o.drain_timeout = std::chrono::milliseconds(static_cast<long long>(args.seconds("drain-timeout", 5, 0, 3600) * 1000));
  o.multishot_accept = !args.flag("single-accept");
  o.direct_descriptors = args.flag("direct-fds");
  cfg.metrics_port = static_cast<int>(args.integer("metrics-port", -1, 0, 65535));
  auto dispatch = args.text("dispatch", "reuseport");
  if (dispatch == "acceptor") o.dispatch = ringio::serve_dispatch::acceptor;
  else if (dispatch != "reuseport") args.fail("--dispatch must be reuseport or acceptor, got '" + dispatch + "'");
}

int run_server(server_config cfg, ringio::connection_handler handler, std::stop_token done,
               ringio::serve_summary* summary) {
  raise_fd_limit();
  ringio::set_log_handler([name = cfg.name](ringio::log_level, std::string_view text) {
    std::string line = name + ": ";
    line.append(text);
    line += '\n';
    (void)!::write(STDERR_FILENO, line.data(), line.size());
  });
  const bool acceptor_mode = cfg.options.dispatch == ringio::serve_dispatch::acceptor && cfg.options.threads > 1;
  metrics_endpoint metrics;  // outlives the loops, which serve it
  if (cfg.metrics_port >= 0 && !metrics.bind(cfg.address.with_port(static_cast<std::uint16_t>(cfg.metrics_port))))
    return 1;
  if (cfg.metrics_port >= 0) {
    cfg.options.on_stop = [&metrics, app_on_stop = std::move(cfg.options.on_stop)](int signal_number) {
      metrics.stop();
      if (app_on_stop) app_on_stop(signal_number);
    };
  }
  cfg.options.on_listening = [&cfg, &metrics, acceptor_mode](const ringio::socket_address& bound,
                                                             ringio::runtime& loops) {
    std::printf("%s: listening on %s, %u thread%s (%s)%s%s, backend %s\n", cfg.name.c_str(), bound.to_string().c_str(),
                loops.size(), loops.size() == 1 ? "" : "s", acceptor_mode ? "one acceptor" : "SO_REUSEPORT per thread",
                cfg.banner.empty() ? "" : ", ", cfg.banner.c_str(), loops.context(0).describe().c_str());
    std::fflush(stdout);
    if (cfg.metrics_port >= 0) metrics.start(loops, cfg.http_server, cfg.name.c_str());
  };
  ringio::result<ringio::serve_summary> r;
  try {
    r = ringio::serve(cfg.address, std::move(handler), cfg.options, std::move(done));
  } catch (const std::exception& e) {
    ringio::log(ringio::log_level::error, "%s", e.what());
    return 1;
  }
  if (!r) return 1;  // logged by ringio::serve
  std::string per_loop;
  for (auto n : r->connections_per_loop) per_loop += " " + std::to_string(n);
  ringio::log(ringio::log_level::info, "connections served per thread:%s", per_loop.c_str());
  if (summary != nullptr) *summary = std::move(*r);
  return 0;
}

}  // namespace apps
