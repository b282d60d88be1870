// SPDX-License-Identifier: Apache-2.0
// The hello-world keep-alive hot path allocates nothing per request: 10,000 requests
// after a warm-up (one by one, and pipelined 16 at a time), on every backend, with
// the global operator new replaced by a counting one; also for a route with path
// parameters (captures decoded into the request's own storage) and a query parsed
// into a caller buffer; and for a file that static_files serves from its open-file
// cache.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <new>
#include <string_view>

#include "ringio/http/query_params.hpp"
#include "ringio/http/router.hpp"
#include "ringio/http/server.hpp"
#include "ringio/http/static_files.hpp"
#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/counting_new.hpp"
#include "support/loopback.hpp"

using namespace ringio;
using namespace ringio_test;

namespace {

constexpr std::string_view hello_request = "GET / HTTP/1.1\r\nHost: bench\r\nUser-Agent: wrk\r\n\r\n";
constexpr std::string_view param_request =
    "GET /users/a%20b/items/42?x=1&y=two+words HTTP/1.1\r\nHost: bench\r\nUser-Agent: wrk\r\n\r\n";
constexpr std::string_view static_request = "GET /static/hello.txt HTTP/1.1\r\nHost: bench\r\nUser-Agent: wrk\r\n\r\n";
constexpr std::string_view hello = "Hello world!";

// Sends `batch` requests per write and reads their responses; counts allocations
// over `counted` requests after `warmup`.
task<long> client(socket_address to, std::string_view request_text, int warmup, int counted, int batch) {
  auto s = co_await stream_socket::connect(to);
  EXPECT_TRUE(s);
  std::array<char, 64 * 1024> out{}, in{};
  for (int i = 0; i < batch; ++i)
    std::copy(request_text.begin(), request_text.end(), out.begin() + i * request_text.size());
  // The first response tells its size (fixed: the Date field has a fixed width).
  auto w = co_await s->send_all(std::span(out).first(request_text.size()));
  std::size_t got = 0;
  while (got < hello.size() || std::string_view(in.data(), got).substr(got - hello.size()) != hello) {
    auto n = co_await s->recv(std::span(in).subspan(got));
    if (!w || !n || *n == 0) co_return -1;
    got += *n;
  }
  const std::size_t response_size = got;
  for (int i = 0; i < warmup + counted; i += batch) {
    if (i == warmup) {
      allocations = 0;
      counting = true;
    }
    auto sent = co_await s->send_all(std::span(out).first(request_text.size() * batch));
    auto r = co_await s->recv_exact(std::span(in).first(response_size * batch));
    if (!sent || !r || *r != response_size * static_cast<std::size_t>(batch)) {
      ADD_FAILURE() << "request " << i << " failed";
      break;
    }
  }
  counting = false;
  co_return allocations.load();
}

class HttpZeroAllocation : public backend_test {
 protected:
  long measure(int batch, std::string_view request_text = hello_request) {
    http::router routes;
    routes.get("/", [](http::request&) -> task<http::response> { co_return http::response::borrowed(200, hello); });
    routes.get("/users/{user}/items/{id}", [](http::request& r) -> task<http::response> {
      std::array<char, 64> scratch{};
      http::query_params q(r.query(), scratch);
      bool right = r.param("user") == "a b" && r.param("id") == "42" && q.find("y") == "two words";
      co_return http::response::borrowed(200, right ? hello : std::string_view("Wrong world!"));
    });
    routes.get("/users/{user}", [](http::request&) -> task<http::response> { co_return http::response(404); });
    routes.prefix("/users/", [](http::request&) -> task<http::response> { co_return http::response(404); });
    // A file served by static_files (from its open-file cache after the first request).
    char dir[] = "/tmp/ringio-alloc-XXXXXX";
    if (::mkdtemp(dir) == nullptr) return -1;
    const std::string root = dir;
    std::ofstream(root + "/hello.txt") << hello;
    routes.prefix("/static/", http::static_files(root));
    struct remove_dir {
      std::string path;
      ~remove_dir() { std::filesystem::remove_all(path); }
    } cleanup{root};
    http::server srv(routes);
    auto l = listen_loopback();
    auto at = address_of(l);
    return run([](http::server& srv, stream_listener& l, socket_address at, std::string_view request_text,
                  int batch) -> task<long> {
      scope server;
      server.spawn([](http::server& srv, stream_listener& l) -> task<void> {
        auto c = co_await l.accept();
        if (c) co_await srv.serve_connection(std::move(*c));
      }(srv, l));
      long n = co_await client(at, request_text, 1024, 10'240, batch);
      server.request_stop();
      co_await server.join();
      co_return n;
    }(srv, l, at, request_text, batch));
  }
};

TEST_P(HttpZeroAllocation, KeepAliveHelloWorldAllocatesNothingPerRequest) {
#if defined(RINGIO_SANITIZED)
  GTEST_SKIP() << "sanitizer builds bypass the coroutine frame cache: each handler call allocates its frame";
#endif
  EXPECT_EQ(measure(1), 0) << "allocations during 10,240 keep-alive requests";
}

TEST_P(HttpZeroAllocation, PipelinedHelloWorldAllocatesNothingPerRequest) {
#if defined(RINGIO_SANITIZED)
  GTEST_SKIP() << "sanitizer builds bypass the coroutine frame cache: each handler call allocates its frame";
#endif
  EXPECT_EQ(measure(16), 0) << "allocations during 10,240 requests pipelined 16 per write";
}

TEST_P(HttpZeroAllocation, PathParametersAndQueryAllocateNothingPerRequest) {
#if defined(RINGIO_SANITIZED)
  GTEST_SKIP() << "sanitizer builds bypass the coroutine frame cache: each handler call allocates its frame";
#endif
  EXPECT_EQ(measure(1, param_request), 0) << "allocations during 10,240 keep-alive requests to a pattern route";
  EXPECT_EQ(measure(16, param_request), 0) << "allocations during 10,240 pipelined requests to a pattern route";
}

TEST_P(HttpZeroAllocation, CachedStaticFileAllocatesNothingPerRequest) {
#if defined(RINGIO_SANITIZED)
  GTEST_SKIP() << "sanitizer builds bypass the coroutine frame cache: each handler call allocates its frame";
#endif
  // The readiness backends check a file's path (once a second) on the blocking pool,
  // which starts its threads as the load asks: a few allocations, not one per request.
  const long bound = GetParam() == backend_kind::uring ? 0 : 16;
  EXPECT_LE(measure(1, static_request), bound) << "allocations during 10,240 keep-alive requests for a cached file";
  EXPECT_LE(measure(16, static_request), bound) << "allocations during 10,240 pipelined requests for a cached file";
}

RINGIO_ALL_BACKENDS(HttpZeroAllocation);

}  // namespace
