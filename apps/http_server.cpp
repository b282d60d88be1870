// http_server — HTTP/1.1 on ringio::http: "Hello world!" at /, or the files under
// --root. SIGINT/SIGTERM stop it gracefully (apps::serve): no new connections,
// requests in progress finish, exit 0.
#include <sys/stat.h>

#include <chrono>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>

#include "common/cli.hpp"
#include "common/serve.hpp"
#include "ringio/http/router.hpp"
#include "ringio/http/server.hpp"
#include "ringio/http/static_files.hpp"

namespace {

constexpr const char* usage =
    "usage: http_server --port P [--host ADDR] [--threads N] [--backend uring|epoll|uring-poll]\n"
    "                   [--root DIR] [--max-connections N] [--idle-timeout SECONDS]\n"
    "                   [--drain-timeout SECONDS]\n"
    "Serves HTTP/1.1 (keep-alive, pipelining). Without --root, GET / answers \"Hello world!\"\n"
    "(text/plain); with --root, the files under DIR (index.html for directories, ETag,\n"
    "Last-Modified, 304, byte ranges). SIGINT/SIGTERM stop it gracefully: no new\n"
    "connections, requests in progress get --drain-timeout (default 5) seconds, exit 0.\n";

constexpr std::string_view hello = "Hello world!";

}  // namespace

int main(int argc, char** argv) {
  apps::cli args(argc, argv, usage);
  apps::server_config cfg;
  cfg.name = "http_server";
  auto port = static_cast<std::uint16_t>(args.required_integer("port", 0, 65535));
  auto host = args.text("host", "127.0.0.1");
  auto addr = ringio::socket_address::from_host(host, port);
  if (!addr) args.fail("invalid --host '" + host + "': " + addr.error().message());
  cfg.address = *addr;
  cfg.threads = static_cast<unsigned>(args.integer("threads", 1, 1, 1024));
  cfg.backend = args.backend();
  cfg.drain_timeout =
      std::chrono::milliseconds(static_cast<long long>(args.seconds("drain-timeout", 5, 0, 3600) * 1000));
  std::string root = args.text("root", "");
  ringio::http::server_options opts;
  opts.max_connections = static_cast<std::size_t>(args.integer("max-connections", 10000, 1, 10'000'000));
  opts.idle_timeout =
      std::chrono::milliseconds(static_cast<long long>(args.seconds("idle-timeout", 30, 0.01, 86400) * 1000));
  args.done();

  ringio::http::router routes;
  if (root.empty()) {
    routes.get("/", [](ringio::http::request&) -> ringio::task<ringio::http::response> {
      co_return ringio::http::response::borrowed(200, hello, "text/plain");
    });
  } else {
    struct stat st {};
    if (::stat(root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) args.fail("--root '" + root + "' is not a directory");
    try {
      routes.prefix("/", ringio::http::static_files(root));
    } catch (const std::exception& e) {
      args.fail(e.what());
    }
  }
  ringio::http::server srv(routes, std::move(opts));
  cfg.on_stop = [&srv] { srv.drain(); };  // idle keep-alive connections close at once
  return apps::serve(cfg, [&srv](ringio::stream_socket s) { return srv.serve_connection(std::move(s)); });
}
