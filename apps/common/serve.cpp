// SPDX-License-Identifier: Apache-2.0
#include "common/serve.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/cli.hpp"
#include "common/handover.hpp"
#include "common/metrics_endpoint.hpp"
#include "ringio/io_context.hpp"
#include "ringio/log.hpp"
#include "ringio/net/inherited_listeners.hpp"
#include "ringio/net/listener_handover.hpp"
#include "ringio/runtime.hpp"

namespace apps {

std::set<std::string> server_flags(std::set<std::string> extra) {
  extra.insert({"single-accept", "sqpoll", "no-defer-taskrun", "direct-fds", "reuse-port", "iowait", "no-ring-resize"});
  return extra;
}

void read_server_options(cli& args, server_config& cfg) {
  // Socket activation first (and at start-up: it changes the environment).
  auto activated = ringio::listeners_from_environment();
  if (!activated) args.fail(std::string("socket activation (LISTEN_FDS): ") + activated.error().message());
  if (!activated->empty()) {
    cfg.inherited = std::make_shared<std::vector<ringio::stream_listener>>();
    for (auto& l : *activated) cfg.inherited->push_back(std::move(l.listener));
  }
  auto port = static_cast<std::uint16_t>(cfg.inherited ? args.integer("port", 0, 0, 65535)
                                                       : args.required_integer("port", 0, 65535));
  auto threads = static_cast<unsigned>(args.integer("threads", 1, 1, 1024));
  read_server_options(args, cfg, port, threads);
}

namespace {

// The handover socket is made next to PATH and renamed over it: PATH cannot be a
// directory, and its directory must exist and take new entries.
void check_handover_path(cli& args, const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    args.fail("--handover-socket: " + path + " is a directory");
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || ::access(dir.c_str(), W_OK | X_OK) != 0)
    args.fail("--handover-socket: " + dir + " is not a writable directory");
}

}  // namespace

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
  o.context.busy_poll = static_cast<unsigned>(args.integer("busy-poll", 0, 0, 10'000'000));
  o.context.no_iowait = !args.flag("iowait");
  o.context.ring_resize = !args.flag("no-ring-resize");
  o.drain_timeout = std::chrono::milliseconds(static_cast<long long>(args.seconds("drain-timeout", 5, 0, 3600) * 1000));
  o.multishot_accept = !args.flag("single-accept");
  o.direct_descriptors = args.flag("direct-fds");
  cfg.metrics_port = static_cast<int>(args.integer("metrics-port", -1, 0, 65535));
  cfg.handover_path = args.text("handover-socket", "");
  // (The new process binds PATH.new.<pid> first: sun_path holds 107 bytes.)
  if (cfg.handover_path.size() > 90) args.fail("--handover-socket: the path is longer than 90 bytes");
  if (args.flag("reuse-port")) o.share_port = true;
  auto dispatch = args.text("dispatch", "reuseport");
  if (dispatch == "acceptor") o.dispatch = ringio::serve_dispatch::acceptor;
  else if (dispatch != "reuseport") args.fail("--dispatch must be reuseport or acceptor, got '" + dispatch + "'");
  if (!cfg.handover_path.empty()) check_handover_path(args, cfg.handover_path);
  // One listener per loop travels in one message, which carries at most 64.
  if (!cfg.handover_path.empty() && o.dispatch == ringio::serve_dispatch::reuse_port &&
      threads > ringio::max_handover_listeners)
    args.fail("--handover-socket: at most " + std::to_string(ringio::max_handover_listeners) +
              " --threads with --dispatch reuseport (one listening socket each is handed over)");
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
  // The listeners: passed in (socket activation), taken over from the process on the
  // handover socket, or bound here.
  std::optional<handover> successors;
  if (!cfg.handover_path.empty()) successors.emplace(cfg.handover_path);
  std::vector<ringio::stream_listener> listeners;
  std::string origin;
  if (cfg.inherited && !cfg.inherited->empty()) {
    listeners = std::move(*cfg.inherited);
    origin = ", socket activation";
  } else if (successors) {
    auto got = successors->take_over();
    if (!got) {
      ringio::log(ringio::log_level::error, "handover from %s failed: %s", cfg.handover_path.c_str(),
                  got.error().message().c_str());
      return 1;
    }
    listeners = std::move(*got);
    if (!listeners.empty()) origin = ", listeners handed over";
  }
  if (listeners.empty()) {
    auto bound = ringio::serve_listeners(cfg.address, cfg.options);
    if (!bound) return 1;  // logged
    listeners = std::move(*bound);
  }
  if (successors) {
    std::vector<int> fds;
    for (auto& l : listeners) fds.push_back(l.native_handle());
    successors->keep(fds);
  }
  if (!origin.empty()) cfg.banner += cfg.banner.empty() ? origin.substr(2) : origin;

  // A successor that takes over stops this process as a signal would.
  std::stop_source stop_all;
  auto forward = [&stop_all] { stop_all.request_stop(); };
  std::stop_callback<decltype(forward)> on_done(done, forward);
  std::atomic<unsigned> loops_running{0};
  std::atomic<unsigned> loops_closed{0};
  bool start_failed = false;  // (set by on_listening, read after serve returned)
  cfg.options.on_drain = [&cfg, &loops_running, &loops_closed, app_on_drain = std::move(cfg.options.on_drain)] {
    if (app_on_drain) app_on_drain();
    if (++loops_closed == loops_running.load() && cfg.on_listeners_closed) cfg.on_listeners_closed();
  };
  cfg.options.on_stop = [&successors, app_on_stop = std::move(cfg.options.on_stop)](int signal_number) {
    if (successors) successors->close();  // no successor from now on
    if (app_on_stop) app_on_stop(signal_number);
  };
  cfg.options.on_listening = [&successors, &stop_all, &loops_running, &start_failed,
                              announce = std::move(cfg.options.on_listening)](const ringio::socket_address& bound,
                                                                              ringio::runtime& loops) {
    loops_running = loops.size();
    // The predecessor stops first, and the handover socket is ours, before the
    // start-up line says that this process serves. A first process that cannot listen
    // on the path could never be replaced: it stops without that line. (One that took
    // over serves on: its predecessor drains already.)
    if (successors && !successors->serve_successors(stop_all) && !successors->took_over()) {
      start_failed = true;
      stop_all.request_stop();
      return;
    }
    announce(bound, loops);
  };
  ringio::result<ringio::serve_summary> r;
  try {
    r = ringio::serve(std::move(listeners), std::move(handler), cfg.options, stop_all.get_token());
  } catch (const std::exception& e) {
    ringio::log(ringio::log_level::error, "%s", e.what());
    return 1;
  }
  if (!r || start_failed) return 1;  // logged
  std::string per_loop;
  for (auto n : r->connections_per_loop) per_loop += " " + std::to_string(n);
  ringio::log(ringio::log_level::info, "connections served per thread:%s", per_loop.c_str());
  if (summary != nullptr) *summary = std::move(*r);
  return 0;
}

}  // namespace apps
