// SPDX-License-Identifier: Apache-2.0
// The http_server program, driven from outside: its CLI contract, hello world and
// static files on every backend, the WebSocket echo at /ws/echo (ws and wss, with
// Python's websockets as the client), the connection limit's log line, and its
// graceful stop on SIGTERM.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "http/http_client.hpp"
#include "support/child_process.hpp"
#include "support/loopback.hpp"

using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

constexpr const char* server = HTTP_SERVER_PATH;
constexpr const char* site = HTTP_SITE_DIR;
constexpr const char* ws_client = HTTP_SERVER_WS_CLIENT;
constexpr const char* python = "/usr/bin/python3";

bool have_python_websockets() {
  return ::access(python, X_OK) == 0 && std::system("/usr/bin/python3 -c 'import websockets' >/dev/null 2>&1") == 0;
}

// A self-signed certificate for 127.0.0.1 in a fresh directory: {dir, cert, key}, or
// empty strings when openssl failed.
std::array<std::string, 3> make_certificate() {
  char tmpl[] = "/tmp/ringio-http-app-XXXXXX";
  const char* made = ::mkdtemp(tmpl);
  if (made == nullptr) return {};
  const std::string dir = made;
  const std::string cert = dir + "/cert.pem", key = dir + "/key.pem";
  child_process mk({"/usr/bin/openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=127.0.0.1", "-addext",
                    "subjectAltName=IP:127.0.0.1"});
  if (mk.wait(30s) != std::optional<int>(0)) return {};
  return {dir, cert, key};
}

// Reads the start-up line ("... listening on 127.0.0.1:PORT ..., backend B ...").
std::uint16_t start(child_process& p, std::string* line_out = nullptr) {
  auto line = p.read_line(10s);
  if (!line) return 0;
  if (line_out) *line_out = *line;
  auto pos = line->find("127.0.0.1:");
  return pos == std::string::npos ? 0 : static_cast<std::uint16_t>(std::stoi(line->substr(pos + 10)));
}

int run_to_exit(std::vector<std::string> argv, std::string* err = nullptr) {
  child_process p(std::move(argv));
  auto st = p.wait(10s);
  if (err) *err = p.stderr_text();
  return st.value_or(-1);
}

TEST(HttpServerCli, HelpExitsZero) { EXPECT_EQ(run_to_exit({server, "--help"}), 0); }

TEST(HttpServerCli, BadArgumentsPrintUsageAndExitTwo) {
  std::string err;
  EXPECT_EQ(run_to_exit({server}, &err), 2);
  EXPECT_NE(err.find("usage:"), std::string::npos);
  EXPECT_EQ(run_to_exit({server, "--port", "70000"}), 2);
  EXPECT_EQ(run_to_exit({server, "--port", "1", "--backend", "kqueue"}), 2);
  EXPECT_EQ(run_to_exit({server, "--port", "1", "--threads", "0"}), 2);
  EXPECT_EQ(run_to_exit({server, "--port", "1", "--root", "/no/such/dir"}, &err), 2);
  EXPECT_NE(err.find("/no/such/dir"), std::string::npos);
  EXPECT_EQ(run_to_exit({server, "--port", "1", "--frobnicate", "2"}), 2);
}

TEST(HttpServerCli, PortInUseExitsOne) {
  auto busy = listen_loopback({.reuse_port = false});
  std::string err;
  EXPECT_EQ(run_to_exit({server, "--port", std::to_string(address_of(busy).port())}, &err), 1);
  EXPECT_NE(err.find("in use"), std::string::npos) << err;
}

class HttpServerApp : public ::testing::TestWithParam<const char*> {};

TEST_P(HttpServerApp, AnswersHelloWorldAndServesARoot) {
  child_process p({server, "--port", "0", "--backend", GetParam(), "--threads", "2"});
  std::string line;
  auto port = start(p, &line);
  ASSERT_NE(port, 0) << p.stderr_text();
  EXPECT_NE(line.find(std::string("backend ") + GetParam()), std::string::npos) << line;
  {
    http_client c(port);
    auto r = c.exchange(get_request("/"));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "Hello world!");
    EXPECT_EQ(r->header("Content-Type"), "text/plain");
  }  // closed before the stop: no drain deadline to wait for
  p.signal(SIGTERM);
  EXPECT_EQ(p.wait(10s), std::optional<int>(0));

  child_process files({server, "--port", "0", "--backend", GetParam(), "--root", site});
  port = start(files);
  ASSERT_NE(port, 0) << files.stderr_text();
  {
    http_client f(port);
    auto r = f.exchange(get_request("/style.css"));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->header("Content-Type"), "text/css; charset=utf-8");
    EXPECT_NE(r->body.find("rgb(1, 2, 3)"), std::string::npos);
    r = f.exchange("OPTIONS * HTTP/1.1\r\nHost: t\r\n\r\n");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->header("Allow"), "GET, HEAD, OPTIONS") << "only what static files serve";
    r = f.exchange("POST /style.css HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 405);
    EXPECT_EQ(r->header("Allow"), "GET, HEAD, OPTIONS");
  }
  files.signal(SIGINT);
  EXPECT_EQ(files.wait(10s), std::optional<int>(0));
}

TEST_P(HttpServerApp, SigtermLetsARequestInProgressFinishThenExitsZero) {
  child_process p({server, "--port", "0", "--backend", GetParam(), "--drain-timeout", "10"});
  auto port = start(p);
  ASSERT_NE(port, 0) << p.stderr_text();
  http_client c(port);
  ASSERT_TRUE(c.send("GET / HTTP/1.1\r\nHost: t\r\n"));  // the request has begun
  std::this_thread::sleep_for(100ms);
  p.signal(SIGTERM);
  std::this_thread::sleep_for(200ms);
  EXPECT_FALSE(http_client(port).connected()) << "still accepting after SIGTERM";
  auto r = c.exchange("\r\n");
  ASSERT_TRUE(r) << "the request in progress was cut";
  EXPECT_EQ(r->body, "Hello world!");
  // Draining: the connection closes after the response it owed, and the server exits
  // well before the 10 s drain deadline.
  EXPECT_EQ(r->header("Connection"), "close");
  EXPECT_TRUE(c.closed_by_peer()) << "a draining server kept the keep-alive connection open";
  EXPECT_EQ(p.wait(5s), std::optional<int>(0)) << p.stderr_text();
}

TEST_P(HttpServerApp, IdleConnectionsAreClosedAtTheDrainDeadline) {
  child_process p({server, "--port", "0", "--backend", GetParam(), "--drain-timeout", "0.3"});
  auto port = start(p);
  ASSERT_NE(port, 0);
  http_client c(port);
  ASSERT_TRUE(c.exchange(get_request("/")));
  p.signal(SIGINT);
  EXPECT_EQ(p.wait(5s), std::optional<int>(0));
  EXPECT_TRUE(c.closed_by_peer());
}

TEST_P(HttpServerApp, EchoesWebSocketMessagesAndClosesThemWhenStopped) {
  if (!have_python_websockets()) GTEST_SKIP() << "needs /usr/bin/python3 with websockets (Debian: python3-websockets)";
  child_process p({server, "--port", "0", "--backend", GetParam()});
  auto port = start(p);
  ASSERT_NE(port, 0) << p.stderr_text();
  const std::string url = "ws://127.0.0.1:" + std::to_string(port) + "/ws/echo";
  child_process echo({python, ws_client, "echo", url});
  auto line = echo.read_line(30s);
  EXPECT_EQ(echo.wait(30s), std::optional<int>(0)) << echo.stderr_text();
  EXPECT_EQ(line.value_or(""), "ok 1000") << echo.stderr_text();
  // An open websocket does not hold up the stop: it is closed with 1001 (going away).
  child_process hold({python, ws_client, "hold", url});
  auto open = hold.read_line(30s);
  ASSERT_EQ(open.value_or(""), "open") << hold.stderr_text();
  p.signal(SIGTERM);
  auto closed = hold.read_line(30s);
  EXPECT_EQ(closed.value_or(""), "closed 1001") << hold.stderr_text();
  EXPECT_EQ(hold.wait(30s), std::optional<int>(0)) << hold.stderr_text();
  EXPECT_EQ(p.wait(10s), std::optional<int>(0)) << p.stderr_text();
}

INSTANTIATE_TEST_SUITE_P(, HttpServerApp, ::testing::Values("uring", "epoll", "uring-poll"), [](const auto& info) {
  std::string s = info.param;
  for (char& ch : s)
    if (ch == '-') ch = '_';
  return s;
});

TEST(HttpServerLimits, ConnectionLimitIsLoggedAndAnswered503) {
  child_process p({server, "--port", "0", "--max-connections", "1"});
  auto port = start(p);
  ASSERT_NE(port, 0);
  {
    http_client first(port);
    ASSERT_TRUE(first.exchange(get_request("/")));
    http_client second(port);
    auto r = second.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 503);
  }
  std::this_thread::sleep_for(100ms);
  EXPECT_NE(p.stderr_text().find("connection limit reached (1 open)"), std::string::npos);
  p.signal(SIGTERM);
  EXPECT_EQ(p.wait(10s), std::optional<int>(0));
}

}  // namespace

// --tls-cert/--tls-key with --http-port: HTTPS on --port and plain HTTP on the other,
// the same routes; one SIGTERM stops both and the program exits 0.
TEST(HttpServerTls, ServesHttpsAndPlainHttpOnTwoPorts) {
  if (::access("/usr/bin/openssl", X_OK) != 0 || ::access("/usr/bin/curl", X_OK) != 0)
    GTEST_SKIP() << "needs /usr/bin/openssl (a certificate) and /usr/bin/curl (an HTTPS client)";
  char tmpl[] = "/tmp/ringio-https-app-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  const std::string cert = dir + "/cert.pem", key = dir + "/key.pem";
  child_process mk({"/usr/bin/openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=localhost"});
  ASSERT_EQ(mk.wait(30s), std::optional<int>(0)) << mk.stderr_text();

  auto probe = listen_loopback({.reuse_port = false});
  const std::uint16_t http_port = address_of(probe).port();
  probe = {};  // free again for the server
  child_process p(
      {server, "--port", "0", "--http-port", std::to_string(http_port), "--tls-cert", cert, "--tls-key", key});
  std::uint16_t https_port = 0;
  bool plain_up = false;
  for (int i = 0; i < 2; ++i) {
    std::string line;
    auto port = start(p, &line);
    ASSERT_NE(port, 0) << p.stderr_text();
    if (line.find(", https,") != std::string::npos) https_port = port;
    else if (line.find(", http,") != std::string::npos && port == http_port) plain_up = true;
  }
  ASSERT_NE(https_port, 0);
  ASSERT_TRUE(plain_up);
  {
    http_client c(http_port);
    auto r = c.exchange(get_request("/"));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "Hello world!");
  }
  child_process curl({"/usr/bin/curl", "-sS", "-w", "\\n", "--max-time", "10", "--cacert", cert, "--resolve",
                      "localhost:" + std::to_string(https_port) + ":127.0.0.1",
                      "https://localhost:" + std::to_string(https_port) + "/"});
  auto body = curl.read_line(10s);
  EXPECT_EQ(curl.wait(10s), std::optional<int>(0)) << curl.stderr_text();
  EXPECT_EQ(body.value_or(""), "Hello world!");
  p.signal(SIGTERM);
  EXPECT_EQ(p.wait(10s), std::optional<int>(0)) << p.stderr_text();
  std::filesystem::remove_all(dir);
}

// wss:// on the HTTPS port and ws:// on --http-port: the same /ws/echo.
TEST(HttpServerTls, EchoesWebSocketMessagesOverTls) {
  if (!have_python_websockets()) GTEST_SKIP() << "needs /usr/bin/python3 with websockets (Debian: python3-websockets)";
  if (::access("/usr/bin/openssl", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/openssl (a certificate)";
  const auto [dir, cert, key] = make_certificate();
  ASSERT_FALSE(dir.empty());
  auto probe = listen_loopback({.reuse_port = false});
  const std::uint16_t http_port = address_of(probe).port();
  probe = {};  // free again for the server
  child_process p(
      {server, "--port", "0", "--http-port", std::to_string(http_port), "--tls-cert", cert, "--tls-key", key});
  std::uint16_t https_port = 0;
  for (int i = 0; i < 2; ++i) {
    std::string line;
    auto port = start(p, &line);
    ASSERT_NE(port, 0) << p.stderr_text();
    if (line.find(", https,") != std::string::npos) https_port = port;
  }
  ASSERT_NE(https_port, 0);
  for (const std::string& url : {"wss://127.0.0.1:" + std::to_string(https_port) + "/ws/echo",
                                 "ws://127.0.0.1:" + std::to_string(http_port) + "/ws/echo"}) {
    child_process echo({python, ws_client, "echo", url, cert});
    auto line = echo.read_line(30s);
    EXPECT_EQ(echo.wait(30s), std::optional<int>(0)) << url << ": " << echo.stderr_text();
    EXPECT_EQ(line.value_or(""), "ok 1000") << url << ": " << echo.stderr_text();
  }
  p.signal(SIGTERM);
  EXPECT_EQ(p.wait(10s), std::optional<int>(0)) << p.stderr_text();
  std::filesystem::remove_all(dir);
}

TEST(HttpServerTls, HttpPortNeedsTlsAndAFreePort) {
  std::string err;
  EXPECT_EQ(run_to_exit({server, "--port", "0", "--http-port", "8080"}, &err), 2);
  EXPECT_NE(err.find("--http-port needs --tls-cert"), std::string::npos) << err;
  EXPECT_EQ(run_to_exit({server, "--port", "0", "--http-port", "70000", "--tls-cert", "c", "--tls-key", "k"}), 2);
}
