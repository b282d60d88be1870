// SPDX-License-Identifier: Apache-2.0
// http::client against a real nginx, started as a child process with a generated
// configuration in a temporary directory, on every backend. Skipped without nginx.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "ringio/http/client.hpp"
#include "support/backend_test.hpp"
#include "support/child_process.hpp"

namespace {

using namespace std::chrono_literals;
using ringio::result;
using ringio::task;
namespace http = ringio::http;

constexpr const char* nginx_path = "/usr/sbin/nginx";
const std::string big_file(300'000, 'n');

std::uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

bool accepts_connections(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

class ClientNginx : public ringio_test::backend_test {
 protected:
  void SetUp() override {
    backend_test::SetUp();
    if (IsSkipped()) return;
    if (::access(nginx_path, X_OK) != 0) GTEST_SKIP() << "no nginx binary at " << nginx_path;
    char tmpl[] = "/tmp/ringio-client-nginx-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::filesystem::create_directories(dir_ + "/www");
    std::ofstream(dir_ + "/www/hello.txt") << "hello from nginx\n";
    std::ofstream(dir_ + "/www/big.txt") << big_file;
    // Workers may run as another user: everything they read must be readable.
    std::filesystem::permissions(dir_, std::filesystem::perms(0755));
    port_ = free_port();
    std::ofstream(dir_ + "/nginx.conf") << "worker_processes 1;\n"
                                           "daemon off;\nmaster_process on;\npid "
                                        << dir_
                                        << "/nginx.pid;\n"
                                           "error_log "
                                        << dir_
                                        << "/error.log warn;\n"
                                           "events { worker_connections 256; }\n"
                                           "http {\n  access_log off;\n  keepalive_timeout 1s;\n"
                                           "  client_body_temp_path "
                                        << dir_ << "/body;\n  proxy_temp_path " << dir_
                                        << "/proxy;\n"
                                           "  fastcgi_temp_path "
                                        << dir_ << "/fastcgi;\n  uwsgi_temp_path " << dir_
                                        << "/uwsgi;\n"
                                           "  scgi_temp_path "
                                        << dir_
                                        << "/scgi;\n"
                                           "  gzip on; gzip_min_length 1; gzip_types text/plain;\n"
                                           "  server {\n    listen 127.0.0.1:"
                                        << port_
                                        << ";\n"
                                           "    root "
                                        << dir_
                                        << "/www;\n    default_type text/plain;\n"
                                           "    location = /post { return 200 \"posted\"; }\n"
                                           "    location = /moved { return 302 /hello.txt; }\n"
                                           "    location = /loop { return 307 /loop; }\n"
                                           "  }\n}\n";
    nginx_ = std::make_unique<ringio_test::child_process>(
        std::vector<std::string>{nginx_path, "-p", dir_, "-c", dir_ + "/nginx.conf", "-e", dir_ + "/error.log"});
    for (int i = 0; i < 200 && !accepts_connections(port_); ++i) std::this_thread::sleep_for(25ms);
    ASSERT_TRUE(accepts_connections(port_)) << "nginx did not start; " << nginx_->stderr_text();
    base_ = "http://127.0.0.1:" + std::to_string(port_);
  }
  void TearDown() override {
    if (nginx_) {
      nginx_->signal(SIGQUIT);
      (void)nginx_->wait(10s);
      nginx_.reset();
    }
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
    backend_test::TearDown();
  }
  std::string url(std::string_view path) const { return base_ + std::string(path); }

  std::string dir_;
  std::uint16_t port_ = 0;
  std::string base_;
  std::unique_ptr<ringio_test::child_process> nginx_;
};

task<result<http::client_response>> fetch(http::client& c, http::request_spec spec) {
  auto r = co_await c.request(spec);
  co_return r;
}

TEST_P(ClientNginx, GetStaticFilesWithKeepAlive) {
  http::client c;
  for (int i = 0; i < 4; ++i) {
    auto r = run(fetch(c, {.url = url("/hello.txt")}));
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "hello from nginx\n");
    EXPECT_EQ(r->header("server").substr(0, 5), "nginx");
  }
  auto big = run(fetch(c, {.url = url("/big.txt")}));
  ASSERT_TRUE(big) << big.error().message();
  EXPECT_EQ(big->body, big_file);
  auto missing = run(fetch(c, {.url = url("/missing")}));
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  auto head = run(fetch(c, {.method = http::method::head, .url = url("/big.txt")}));
  ASSERT_TRUE(head);
  EXPECT_EQ(head->header("content-length"), std::to_string(big_file.size()));
  EXPECT_EQ(head->body, "");
  EXPECT_EQ(c.stats().connections_opened, 1u);
  EXPECT_EQ(c.stats().connections_reused, 6u);  // seven requests, one connection
}

TEST_P(ClientNginx, ChunkedResponse) {
  http::client c;
  const std::array<http::header, 1> gzip{http::header{"Accept-Encoding", "gzip"}};
  auto r = run(fetch(c, {.url = url("/big.txt"), .headers = gzip}));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->header("transfer-encoding"), "chunked");
  EXPECT_EQ(r->header("content-encoding"), "gzip");
  ASSERT_GE(r->body.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(r->body[0]), 0x1f);  // a gzip stream, delivered whole
  EXPECT_EQ(static_cast<unsigned char>(r->body[1]), 0x8b);
  EXPECT_LT(r->body.size(), big_file.size());
  auto after = run(fetch(c, {.url = url("/hello.txt")}));  // the connection was reusable
  ASSERT_TRUE(after);
  EXPECT_EQ(c.stats().connections_opened, 1u);
}

TEST_P(ClientNginx, PostWithBothBodyKinds) {
  http::client c;
  auto sized = run(fetch(c, {.method = http::method::post,
                             .url = url("/post"),
                             .body = "a=1&b=2",
                             .content_type = "application/x-www-form-urlencoded"}));
  ASSERT_TRUE(sized) << sized.error().message();
  EXPECT_EQ(sized->body, "posted");
  auto chunked = run([](http::client& c, std::string u) -> task<result<http::client_response>> {
    int left = 3;
    http::request_spec spec{.method = http::method::post, .url = u, .content_type = "text/plain"};
    spec.source = [&left](std::span<char> out) -> task<result<std::size_t>> {
      if (left == 0) co_return std::size_t{0};
      --left;
      out[0] = 'x';
      co_return std::size_t{1};
    };
    auto r = co_await c.request(spec);
    co_return r;
  }(c, url("/post")));
  ASSERT_TRUE(chunked) << chunked.error().message();
  EXPECT_EQ(chunked->body, "posted");
  EXPECT_EQ(c.stats().connections_opened, 1u);
}

TEST_P(ClientNginx, IdleConnectionClosedByNginx) {
  http::client c;
  ASSERT_TRUE(run(fetch(c, {.url = url("/hello.txt")})));
  std::this_thread::sleep_for(1500ms);  // keepalive_timeout 1s
  auto r = run(fetch(c, {.url = url("/hello.txt")}));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->body, "hello from nginx\n");
  EXPECT_EQ(c.stats().connections_opened, 2u);
}

TEST_P(ClientNginx, Redirects) {
  http::client plain;
  auto r = run(fetch(plain, {.url = url("/moved")}));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 302);
  http::client following({.follow_redirects = true, .max_redirects = 4});
  auto moved = run(fetch(following, {.url = url("/moved")}));
  ASSERT_TRUE(moved) << moved.error().message();
  EXPECT_EQ(moved->body, "hello from nginx\n");
  auto loop = run(fetch(following, {.url = url("/loop")}));
  ASSERT_FALSE(loop);
  EXPECT_EQ(loop.error(), http::client_errc::too_many_redirects);
}

RINGIO_ALL_BACKENDS(ClientNginx);

}  // namespace
