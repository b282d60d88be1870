// SPDX-License-Identifier: Apache-2.0
// http_server — HTTP/1.1 on ringio::http: "Hello world!" at /, or the files under
// --root, and a WebSocket echo at /ws/echo. SIGINT/SIGTERM stop it gracefully (ringio::serve): no new connections,
// requests in progress finish, exit 0.
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdint>
#include <exception>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>

#include "common/cli.hpp"
#include "common/serve.hpp"
#include "ringio/http/https.hpp"
#include "ringio/http/router.hpp"
#include "ringio/http/server.hpp"
#include "ringio/http/static_files.hpp"
#include "ringio/http/websocket_accept.hpp"
#include "ringio/tls/context.hpp"

namespace {

const std::string usage =
    std::string(
        "usage: http_server --port P [options] [--root DIR] [--max-connections N]\n"
        "                   [--idle-timeout SECONDS] [--no-sendfile]\n"
        "                   [--open-files N] [--open-files-valid SECONDS]\n"
        "Serves HTTP/1.1 (keep-alive, pipelining). Without --root, GET / answers \"Hello world!\"\n"
        "(text/plain); with --root, the files under DIR (index.html for directories, ETag,\n"
        "Last-Modified, 304, byte ranges). /ws/echo is a WebSocket that sends every text or\n"
        "binary message back as it came (over HTTPS too: wss://). SIGINT/SIGTERM stop it gracefully: no new\n"
        "connections, idle ones close, requests in progress get --drain-timeout seconds, exit 0.\n"
        "--no-sendfile reads files over 16 KiB through the loop instead of sendfile(2).\n"
        "--open-files N: files each loop keeps open (default 1024; 0: open, stat and close per\n"
        "request); --open-files-valid SECONDS: how long one is served before its path is\n"
        "checked again (default 1; 0: every request).\n"
        "--tls-cert FILE --tls-key FILE: HTTPS (TLS 1.2/1.3, ALPN http/1.1) with that PEM\n"
        "certificate chain and key; --http-port P serves plain HTTP on port P as well (the\n"
        "same routes, --threads more loop threads; a second start-up line names it).\n"
        "options:\n") +
    apps::server_port_threads_usage + apps::server_options_usage;

constexpr std::string_view hello = "Hello world!";

// /ws/echo: every message back as it came, text as text and binary as binary, until
// the client closes (or the server drains: the websocket then closes with 1001).
ringio::task<void> echo_messages(ringio::http::websocket& ws) {
  for (;;) {
    auto m = co_await ws.receive();
    if (!m) co_return;
    ringio::result<void> sent;
    if (m->is_text()) {
      sent = co_await ws.send_text(m->data);
    } else {
      sent = co_await ws.send_binary(m->data);
    }
    if (!sent) co_return;
  }
}

// HTTPS on cfg's address and plain HTTP on `http_port` of the same host, each with its
// own loops; a signal (or either one failing) stops both. Exit status as run_server's.
int serve_both(apps::server_config cfg, ringio::http::server& srv, const ringio::tls::context& tls,
               std::uint16_t http_port) {
  apps::server_config plain = cfg;
  plain.banner = "http";
  plain.address = cfg.address.with_port(http_port);
  plain.options.handle_signals = false;
  plain.options.on_stop = nullptr;
  plain.metrics_port = -1;  // one /metrics, on the HTTPS side
  std::stop_source stop_plain, stop_tls;
  cfg.options.on_stop = [&srv, &stop_plain](int) {
    srv.drain();
    stop_plain.request_stop();
  };
  int plain_status = 0;
  std::thread plain_thread([&] {
    // Its loop threads inherit this mask: the signals go to the HTTPS side's waiter.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    plain_status = apps::run_server(
        plain, [&srv](ringio::stream_socket s) { return srv.serve_connection(std::move(s)); }, stop_plain.get_token());
    stop_tls.request_stop();  // it failed (or was stopped): the HTTPS side ends too
  });
  int tls_status = apps::run_server(
      cfg, [&srv, &tls](ringio::stream_socket s) { return ringio::http::serve_tls_connection(srv, tls, std::move(s)); },
      stop_tls.get_token());
  stop_plain.request_stop();
  plain_thread.join();
  return tls_status != 0 ? tls_status : plain_status;
}

}  // namespace

int main(int argc, char** argv) {
  apps::cli args(argc, argv, usage, apps::server_flags({"no-sendfile"}));
  apps::server_config cfg;
  cfg.name = "http_server";
  apps::read_server_options(args, cfg);
  std::string root = args.text("root", "");
  const std::string tls_cert = args.text("tls-cert", "");
  const std::string tls_key = args.text("tls-key", "");
  if (tls_cert.empty() != tls_key.empty()) args.fail("--tls-cert and --tls-key go together");
  const auto http_port = args.integer("http-port", -1, 0, 65535);
  if (http_port >= 0 && tls_cert.empty()) args.fail("--http-port needs --tls-cert and --tls-key");
  ringio::http::server_options opts;
  opts.max_connections = static_cast<std::size_t>(args.integer("max-connections", 10000, 1, 10'000'000));
  opts.idle_timeout =
      std::chrono::milliseconds(static_cast<long long>(args.seconds("idle-timeout", 30, 0.01, 86400) * 1000));
  opts.sendfile = !args.flag("no-sendfile");
  ringio::http::static_files_options files;
  files.open_file_cache_entries = static_cast<std::size_t>(args.integer("open-files", 1024, 0, 1'000'000));
  files.open_file_cache_valid_for =
      std::chrono::milliseconds(static_cast<long long>(args.seconds("open-files-valid", 1, 0, 86400) * 1000));
  args.done();

  ringio::http::router routes;
  // An exact path: it wins over the static files' prefix.
  routes.get("/ws/echo", [](ringio::http::request& r) -> ringio::task<ringio::http::response> {
    co_return ringio::http::accept_websocket(r, echo_messages);
  });
  if (root.empty()) {
    routes.get("/", [](ringio::http::request&) -> ringio::task<ringio::http::response> {
      co_return ringio::http::response::borrowed(200, hello, "text/plain");
    });
  } else {
    struct stat st {};
    if (::stat(root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) args.fail("--root '" + root + "' is not a directory");
    try {
      // GET only (HEAD follows it): the router then answers other methods with 405 and
      // OPTIONS * with exactly what is served.
      routes.prefix(ringio::http::method::get, "/", ringio::http::static_files(root, files));
    } catch (const std::exception& e) {
      args.fail(e.what());
    }
  }
  if (http_port >= 0 && cfg.restartable())
    args.fail("--http-port serves a second port: not with --handover-socket, --reuse-port or socket activation");
  ringio::http::server srv(routes, std::move(opts));
  cfg.http_server = &srv;
  if (cfg.restartable()) {
    // Another process takes over: once no listener of ours accepts, every response
    // closes its connection, so clients reconnect (to the new process) between
    // requests; keep-alive connections idle for a second close.
    cfg.on_listeners_closed = [&srv] { srv.drain(std::chrono::seconds(1)); };
  } else {
    cfg.options.on_stop = [&srv](int) { srv.drain(); };  // idle keep-alive connections close at once
  }
  if (!tls_cert.empty()) {
    auto tls = ringio::tls::context::server(
        {.certificate_chain_file = tls_cert, .private_key_file = tls_key, .alpn = {"http/1.1"}});
    if (!tls) args.fail(tls_cert + ", " + tls_key + ": " + tls.error().message());
    cfg.banner = "https";
    if (http_port < 0) {
      return apps::run_server(cfg, [&srv, &tls](ringio::stream_socket s) {
        return ringio::http::serve_tls_connection(srv, *tls, std::move(s));
      });
    }
    return serve_both(cfg, srv, *tls, static_cast<std::uint16_t>(http_port));
  }
  return apps::run_server(cfg, [&srv](ringio::stream_socket s) { return srv.serve_connection(std::move(s)); });
}
