// SPDX-License-Identifier: Apache-2.0
// Restarts that refuse no connection and fail no request: http_server and echo_server
// restarted three times back to back under load (wrk, churn_bench, echo_bench) through
// the handover socket and through SO_REUSEPORT, started by socket activation, and two
// http_server upstreams behind nginx restarted one at a time. Every count of errors must
// be zero. Processes are stopped by PID (child_process kills what is left).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ringio/net/socket_address.hpp"
#include "ringio/net/stream_listener.hpp"
#include "support/child_process.hpp"

using namespace std::chrono_literals;
using ringio_test::child_process;

namespace {

constexpr const char* http_server = HTTP_SERVER_PATH;
constexpr const char* echo_server = ECHO_SERVER_PATH;
constexpr const char* churn_bench = CHURN_BENCH_PATH;
constexpr const char* echo_bench = ECHO_BENCH_PATH;
constexpr const char* wrk_path = "/usr/bin/wrk";
// RINGIO_NGINX names another nginx binary (one unpacked without installing, say).
const char* const nginx_path = std::getenv("RINGIO_NGINX") != nullptr ? std::getenv("RINGIO_NGINX") : "/usr/sbin/nginx";
constexpr int restarts = 3;

// A temporary directory, removed with everything in it.
struct temp_dir {
  std::string path;
  temp_dir() {
    char tmpl[] = "/tmp/ringio-restart-XXXXXX";
    if (::mkdtemp(tmpl) != nullptr) path = tmpl;
  }
  ~temp_dir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
};

// The port of a server's start-up line ("... listening on 127.0.0.1:P, ..."), 0 if none.
std::uint16_t port_of(const std::string& line) {
  std::smatch m;
  if (!std::regex_search(line, m, std::regex("listening on 127\\.0\\.0\\.1:([0-9]+)"))) return 0;
  return static_cast<std::uint16_t>(std::stoi(m[1]));
}

// Starts a server and waits for its start-up line; nullptr (with the reason) if none.
std::unique_ptr<child_process> start(std::vector<std::string> argv, std::string* line, std::string* why) {
  auto p = std::make_unique<child_process>(std::move(argv));
  auto l = p->read_line(20s);
  if (!l) {
    *why = "no start-up line; stderr: " + p->stderr_text();
    return nullptr;
  }
  *line = *l;
  return p;
}

// Everything left on a child's stdout until it closes (bounded by `timeout`).
std::string rest_of_stdout(child_process& p, std::chrono::milliseconds timeout) {
  std::string all;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    auto l =
        p.read_line(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()));
    if (!l) break;
    all += *l + "\n";
  }
  return all;
}

struct wrk_report {
  std::uint64_t requests = 0;
  std::uint64_t socket_errors = 0;
  std::uint64_t non_2xx = 0;
  std::string text;
};

wrk_report parse_wrk(const std::string& text) {
  wrk_report r;
  r.text = text;
  std::smatch m;
  if (std::regex_search(text, m, std::regex("([0-9]+) requests in"))) r.requests = std::stoull(m[1]);
  if (std::regex_search(text, m,
                        std::regex("Socket errors: connect ([0-9]+), read ([0-9]+), write ([0-9]+), timeout ([0-9]+)")))
    r.socket_errors = std::stoull(m[1]) + std::stoull(m[2]) + std::stoull(m[3]) + std::stoull(m[4]);
  if (std::regex_search(text, m, std::regex("Non-2xx or 3xx responses: ([0-9]+)"))) r.non_2xx = std::stoull(m[1]);
  return r;
}

// wrk against `port` until stopped (SIGINT makes it report).
std::unique_ptr<child_process> start_wrk(std::uint16_t port, int connections) {
  return std::make_unique<child_process>(std::vector<std::string>{wrk_path, "-t2", "-c" + std::to_string(connections),
                                                                  "-d120s", "--timeout", "10s",
                                                                  "http://127.0.0.1:" + std::to_string(port) + "/"});
}

wrk_report stop_wrk(child_process& wrk) {
  wrk.signal(SIGINT);
  std::string out = rest_of_stdout(wrk, 30s);
  (void)wrk.wait(10s);
  return parse_wrk(out);
}

// Replaces `current` by a server started with `argv` that takes over from it, and waits
// for the old one to drain and exit 0. Returns the failure, empty on success.
std::string restart(std::unique_ptr<child_process>& current, const std::vector<std::string>& argv, std::uint16_t port,
                    bool signal_old) {
  std::string line, why;
  auto next = start(argv, &line, &why);
  if (!next) return "the new server did not start: " + why;
  if (port_of(line) != port) return "the new server serves another port: " + line;
  if (signal_old) current->signal(SIGTERM);
  auto st = current->wait(30s);
  if (!st) return "the old server did not exit; stderr: " + current->stderr_text();
  if (*st != 0) return "the old server exited " + std::to_string(*st) + "; stderr: " + current->stderr_text();
  current = std::move(next);
  return {};
}

bool have(const char* path) { return ::access(path, X_OK) == 0; }

class HttpServerRestart : public ::testing::TestWithParam<int> {};

TEST_P(HttpServerRestart, HandoverThreeTimesUnderWrkFailsNoRequest) {
  if (!have(wrk_path)) GTEST_SKIP() << "no wrk at " << wrk_path << " (Debian package wrk)";
  temp_dir dir;
  ASSERT_FALSE(dir.path.empty());
  const std::string sock = dir.path + "/handover.sock";
  const std::string threads = std::to_string(GetParam());
  std::string line, why;
  auto server = start({http_server, "--port", "0", "--threads", threads, "--handover-socket", sock}, &line, &why);
  ASSERT_TRUE(server) << why;
  const std::uint16_t port = port_of(line);
  ASSERT_NE(port, 0) << line;
  auto wrk = start_wrk(port, 32);
  std::this_thread::sleep_for(500ms);
  for (int i = 0; i < restarts; ++i) {
    auto failure =
        restart(server, {http_server, "--port", std::to_string(port), "--threads", threads, "--handover-socket", sock},
                port, false);
    ASSERT_TRUE(failure.empty()) << "restart " << i + 1 << ": " << failure;
    std::this_thread::sleep_for(300ms);
  }
  std::this_thread::sleep_for(300ms);
  auto report = stop_wrk(*wrk);
  EXPECT_GT(report.requests, 0U) << report.text;
  EXPECT_EQ(report.socket_errors, 0U) << report.text;
  EXPECT_EQ(report.non_2xx, 0U) << report.text;
  server->signal(SIGTERM);
  EXPECT_EQ(server->wait(30s), 0);
  EXPECT_FALSE(std::filesystem::exists(sock)) << "the last server leaves its handover socket behind";
}

INSTANTIATE_TEST_SUITE_P(Threads, HttpServerRestart, ::testing::Values(1, 2));

TEST(HttpServerReusePort, ThreeRestartsUnderWrkFailNoRequest) {
  if (!have(wrk_path)) GTEST_SKIP() << "no wrk at " << wrk_path << " (Debian package wrk)";
  std::string line, why;
  auto server = start({http_server, "--port", "0", "--reuse-port"}, &line, &why);
  ASSERT_TRUE(server) << why;
  const std::uint16_t port = port_of(line);
  ASSERT_NE(port, 0) << line;
  auto wrk = start_wrk(port, 32);
  std::this_thread::sleep_for(500ms);
  for (int i = 0; i < restarts; ++i) {
    // The new process joins the port; the old one then closes its listener first and
    // only afterwards tells its clients to reconnect.
    auto failure = restart(server, {http_server, "--port", std::to_string(port), "--reuse-port"}, port, true);
    ASSERT_TRUE(failure.empty()) << "restart " << i + 1 << ": " << failure;
    std::this_thread::sleep_for(300ms);
  }
  std::this_thread::sleep_for(300ms);
  auto report = stop_wrk(*wrk);
  EXPECT_GT(report.requests, 0U) << report.text;
  EXPECT_EQ(report.socket_errors, 0U) << report.text;
  EXPECT_EQ(report.non_2xx, 0U) << report.text;
  server->signal(SIGTERM);
  EXPECT_EQ(server->wait(30s), 0);
}

TEST(HttpServerReusePort, WithoutItASecondServerOnThePortIsRefused) {
  std::string line, why;
  auto server = start({http_server, "--port", "0", "--threads", "2"}, &line, &why);
  ASSERT_TRUE(server) << why;
  child_process second({http_server, "--port", std::to_string(port_of(line)), "--threads", "2"});
  EXPECT_EQ(second.wait(20s), 1);
  server->signal(SIGTERM);
  EXPECT_EQ(server->wait(30s), 0);
}

// A process started as socket activation starts it: the listener at descriptor 3, the
// variables naming this process. Stopped by PID; killed if the test fails.
class activated_process {
 public:
  activated_process(const std::vector<std::string>& argv, int listener, const std::string& listen_fds,
                    bool own_pid = true) {
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) return;
    std::vector<std::string> env_text;
    for (char** e = environ; *e != nullptr; ++e) {
      std::string v(*e);
      if (v.rfind("LISTEN_", 0) != 0) env_text.push_back(v);
    }
    env_text.push_back("LISTEN_FDS=" + listen_fds);
    env_text.push_back("LISTEN_FDNAMES=http");
    std::vector<std::string> args = argv;
    pid_ = ::fork();
    if (pid_ == 0) {
      // (The child only sets up descriptors and its environment, then execs.)
      ::dup2(out[1], 1);
      if (listener == 3) ::fcntl(3, F_SETFD, 0);
      else ::dup2(listener, 3);
      env_text.push_back("LISTEN_PID=" + std::to_string(own_pid ? ::getpid() : ::getppid()));
      std::vector<char*> envp, argp;
      for (auto& e : env_text) envp.push_back(e.data());
      envp.push_back(nullptr);
      for (auto& a : args) argp.push_back(a.data());
      argp.push_back(nullptr);
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      ::execve(argp[0], argp.data(), envp.data());
      ::_exit(127);
    }
    ::close(out[1]);
    out_ = out[0];
  }
  ~activated_process() {
    if (pid_ > 0 && !status_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (out_ >= 0) ::close(out_);
  }
  activated_process(const activated_process&) = delete;
  activated_process& operator=(const activated_process&) = delete;

  std::optional<std::string> read_line(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::string line;
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{out_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char c;
      if (::read(out_, &c, 1) != 1) return std::nullopt;
      if (c == '\n') return line;
      line += c;
    }
    return std::nullopt;
  }
  std::optional<int> wait(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!status_ && std::chrono::steady_clock::now() < deadline) {
      int st = 0;
      pid_t r = ::waitpid(pid_, &st, WNOHANG);
      if (r == pid_) status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      else std::this_thread::sleep_for(10ms);
    }
    return status_;
  }
  void signal(int sig) const { ::kill(pid_, sig); }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  std::optional<int> status_;
};

// One GET / on a new connection: the status line, empty on failure.
std::string get_status(std::uint16_t port) {
  auto at = ringio::socket_address::loopback(port);
  int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  std::string reply;
  if (::connect(c, at.native(), at.size()) == 0) {
    const std::string req = "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    (void)!::write(c, req.data(), req.size());
    char buf[512];
    ssize_t n;
    while ((n = ::read(c, buf, sizeof buf)) > 0) reply.append(buf, static_cast<std::size_t>(n));
  }
  ::close(c);
  return reply.substr(0, reply.find("\r\n"));
}

TEST(HttpServerSocketActivation, ServesTheSocketPassedInWithoutAPort) {
  auto l = ringio::stream_listener::bind(ringio::socket_address::loopback(0));
  ASSERT_TRUE(l);
  const auto port = l->local_address()->port();
  activated_process server({http_server}, l->native_handle(), "1");
  l->close();  // the server holds the only descriptor now
  auto line = server.read_line(20s);
  ASSERT_TRUE(line) << "no start-up line";
  EXPECT_EQ(port_of(*line), port) << *line;
  EXPECT_NE(line->find("socket activation"), std::string::npos) << *line;
  EXPECT_EQ(get_status(port), "HTTP/1.1 200 OK");
  server.signal(SIGTERM);
  EXPECT_EQ(server.wait(30s), 0);
}

TEST(HttpServerSocketActivation, MalformedVariablesExitTwo) {
  auto l = ringio::stream_listener::bind(ringio::socket_address::loopback(0));
  ASSERT_TRUE(l);
  for (const char* fds : {"x", "0", "2"}) {  // (2: descriptor 4 is no listener)
    SCOPED_TRACE(fds);
    activated_process server({http_server}, l->native_handle(), fds);
    EXPECT_EQ(server.wait(20s), 2);
  }
  // Meant for another process: not taken, and then --port is required.
  activated_process other({http_server}, l->native_handle(), "1", false);
  EXPECT_EQ(other.wait(20s), 2);
}

TEST(HttpServerHandoverCli, BadCombinationsExitTwo) {
  for (auto argv : std::vector<std::vector<std::string>>{
           {http_server, "--port", "0", "--reuse-port=yes"},
           {http_server, "--port", "0", "--handover-socket"},
           {http_server, "--port", "0", "--handover-socket", "/tmp/" + std::string(100, 'x')},
           {http_server, "--port", "0", "--tls-cert", "c", "--tls-key", "k", "--http-port", "0", "--reuse-port"}}) {
    child_process p(argv);
    EXPECT_EQ(p.wait(20s), 2) << argv.back();
    EXPECT_NE(p.stderr_text().find("usage:"), std::string::npos);
  }
}

TEST(HttpServerHandoverCli, AHandoverSocketWithNobodyBehindItIsReplaced) {
  temp_dir dir;
  const std::string sock = dir.path + "/stale.sock";
  {
    auto stale = ringio::stream_listener::bind(*ringio::socket_address::unix_path(sock));  // closed: nobody listens
    ASSERT_TRUE(stale);
  }
  std::string line, why;
  auto server = start({http_server, "--port", "0", "--handover-socket", sock}, &line, &why);
  ASSERT_TRUE(server) << why;
  EXPECT_EQ(line.find("handed over"), std::string::npos) << line;
  server->signal(SIGTERM);
  EXPECT_EQ(server->wait(30s), 0);
}

// A blocking client connection with a receive timeout.
struct raw_client {
  int fd = -1;
  explicit raw_client(std::uint16_t port) {
    auto at = ringio::socket_address::loopback(port);
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    timeval tv{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (::connect(fd, at.native(), at.size()) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ~raw_client() {
    if (fd >= 0) ::close(fd);
  }
  raw_client(const raw_client&) = delete;
  raw_client& operator=(const raw_client&) = delete;
  // One keep-alive GET / and its response head ("" on failure).
  std::string get() {
    const std::string req = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) return {};
    std::string got;
    char buf[1024];
    while (got.find("Hello world!") == std::string::npos) {
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return {};
      got.append(buf, static_cast<std::size_t>(n));
    }
    return got;
  }
  // Whether the server closes the connection within the receive timeout.
  bool closed_by_server() {
    char c;
    return ::recv(fd, &c, 1, 0) == 0;
  }
};

TEST(HttpServerHandoverDrain, ResponsesCloseTheirConnectionsAndIdleOnesCloseAfterAGrace) {
  temp_dir dir;
  const std::string sock = dir.path + "/handover.sock";
  std::string line, why;
  auto server = start({http_server, "--port", "0", "--handover-socket", sock, "--drain-timeout", "30"}, &line, &why);
  ASSERT_TRUE(server) << why;
  const std::uint16_t port = port_of(line);
  raw_client busy(port), idle(port);
  ASSERT_GE(busy.fd, 0);
  ASSERT_GE(idle.fd, 0);
  std::string first = busy.get();
  ASSERT_NE(first.find("200 OK"), std::string::npos) << first;
  EXPECT_EQ(first.find("Connection: close"), std::string::npos) << first;
  ASSERT_NE(idle.get().find("200 OK"), std::string::npos);
  // A successor takes over; the old process keeps both connections for now.
  auto next = start({http_server, "--port", std::to_string(port), "--handover-socket", sock}, &line, &why);
  ASSERT_TRUE(next) << why;
  // Answered by the old process: once its drain has begun (a moment after it stopped
  // accepting) the response says Connection: close, and the connection closes.
  std::string last;
  for (int i = 0; i < 200; ++i) {
    last = busy.get();
    ASSERT_NE(last.find("200 OK"), std::string::npos) << "request " << i << " failed: " << last;
    if (last.find("Connection: close") != std::string::npos) break;
    std::this_thread::sleep_for(25ms);
  }
  EXPECT_NE(last.find("Connection: close"), std::string::npos) << last;
  EXPECT_TRUE(busy.closed_by_server());
  const auto before = std::chrono::steady_clock::now();
  EXPECT_TRUE(idle.closed_by_server()) << "an idle keep-alive connection stayed open";
  EXPECT_LT(std::chrono::steady_clock::now() - before, 8s);  // (1 s grace; the drain timeout is 30 s)
  EXPECT_EQ(server->wait(30s), 0) << server->stderr_text();
  raw_client fresh(port);  // the new process serves
  EXPECT_NE(fresh.get().find("200 OK"), std::string::npos);
  next->signal(SIGTERM);
  EXPECT_EQ(next->wait(30s), 0);
}

std::uint64_t json_field(const std::string& text, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex("\"" + name + "\":([0-9]+)"))) return UINT64_MAX;
  return std::stoull(m[1]);
}

TEST(EchoServerRestart, HandoverThreeTimesUnderConnectionChurnFailsNoSession) {
  temp_dir dir;
  const std::string sock = dir.path + "/handover.sock";
  std::string line, why;
  auto server = start({echo_server, "--port", "0", "--threads", "2", "--handover-socket", sock}, &line, &why);
  ASSERT_TRUE(server) << why;
  const std::uint16_t port = port_of(line);
  ASSERT_NE(port, 0) << line;
  // Every session is a new connection: a refused one would count as failed.
  child_process churn({churn_bench, "--port", std::to_string(port), "--concurrency", "16", "--sessions", "100000000",
                       "--timeout", "12", "--verify"});
  std::this_thread::sleep_for(500ms);
  for (int i = 0; i < restarts; ++i) {
    auto failure =
        restart(server, {echo_server, "--port", std::to_string(port), "--threads", "2", "--handover-socket", sock},
                port, false);
    ASSERT_TRUE(failure.empty()) << "restart " << i + 1 << ": " << failure;
  }
  std::string out = rest_of_stdout(churn, 60s);
  EXPECT_EQ(churn.wait(20s), 0) << out << churn.stderr_text();
  EXPECT_EQ(json_field(out, "failed"), 0U) << out;
  EXPECT_GT(json_field(out, "sessions"), 0U) << out;
  server->signal(SIGTERM);
  EXPECT_EQ(server->wait(30s), 0);
}

TEST(EchoServerRestart, HandoverThreeTimesKeepsOpenConnectionsUntilTheyClose) {
  temp_dir dir;
  const std::string sock = dir.path + "/handover.sock";
  std::string line, why;
  // Open connections stay with the process that accepted them: it drains until they close.
  const std::vector<std::string> argv_tail = {"--handover-socket", sock, "--drain-timeout", "120"};
  std::vector<std::string> argv = {echo_server, "--port", "0"};
  argv.insert(argv.end(), argv_tail.begin(), argv_tail.end());
  auto server = start(argv, &line, &why);
  ASSERT_TRUE(server) << why;
  const std::uint16_t port = port_of(line);
  ASSERT_NE(port, 0) << line;
  child_process bench({echo_bench, "--port", std::to_string(port), "--connections", "16", "--length", "64",
                       "--duration", "4", "--verify"});
  std::this_thread::sleep_for(500ms);
  std::vector<std::unique_ptr<child_process>> draining;
  argv[2] = std::to_string(port);
  for (int i = 0; i < restarts; ++i) {
    auto next = start(argv, &line, &why);
    ASSERT_TRUE(next) << "restart " << i + 1 << ": " << why;
    draining.push_back(std::move(server));
    server = std::move(next);
    // A new connection reaches the new process (the old one no longer accepts).
    child_process probe({echo_bench, "--port", std::to_string(port), "--connections", "1", "--length", "8",
                         "--duration", "0.2", "--verify"});
    std::string probe_out = rest_of_stdout(probe, 30s);
    EXPECT_EQ(json_field(probe_out, "errors"), 0U) << probe_out;
  }
  std::string out = rest_of_stdout(bench, 60s);
  EXPECT_EQ(bench.wait(20s), 0) << out << bench.stderr_text();
  EXPECT_EQ(json_field(out, "errors"), 0U) << out;
  EXPECT_NE(out.find(" 0 bad replies"), std::string::npos) << out;
  for (auto& old : draining) EXPECT_EQ(old->wait(30s), 0) << old->stderr_text();
  server->signal(SIGTERM);
  EXPECT_EQ(server->wait(30s), 0);
}

// nginx balancing over two http_server upstreams, each restarted in turn under wrk.
TEST(NginxOverRestartedUpstreams, ThreeRestartsOneUpstreamAtATimeFailNoRequest) {
  if (!have(nginx_path)) GTEST_SKIP() << "no nginx at " << nginx_path << " (Debian package nginx-light)";
  if (!have(wrk_path)) GTEST_SKIP() << "no wrk at " << wrk_path << " (Debian package wrk)";
  temp_dir dir;
  ASSERT_FALSE(dir.path.empty());
  std::filesystem::permissions(dir.path, std::filesystem::perms(0755));
  std::string line, why;
  std::unique_ptr<child_process> upstream[2];
  std::uint16_t upstream_port[2] = {};
  std::string sock[2];
  for (int i = 0; i < 2; ++i) {
    sock[i] = dir.path + "/upstream" + std::to_string(i) + ".sock";
    upstream[i] = start({http_server, "--port", "0", "--handover-socket", sock[i]}, &line, &why);
    ASSERT_TRUE(upstream[i]) << why;
    upstream_port[i] = port_of(line);
    ASSERT_NE(upstream_port[i], 0) << line;
  }
  // nginx on a port the kernel picks for a moment.
  std::uint16_t port = 0;
  {
    auto probe = ringio::stream_listener::bind(ringio::socket_address::loopback(0));
    ASSERT_TRUE(probe);
    port = probe->local_address()->port();
  }
  std::ofstream(dir.path + "/nginx.conf")
      << "worker_processes 1;\ndaemon off;\nmaster_process on;\npid " << dir.path << "/nginx.pid;\n"
      << "error_log " << dir.path << "/error.log warn;\n"
      << "events { worker_connections 1024; }\n"
      << "http {\n  access_log off;\n"
      << "  client_body_temp_path " << dir.path << "/body;\n  proxy_temp_path " << dir.path << "/proxy;\n"
      << "  fastcgi_temp_path " << dir.path << "/fastcgi;\n  uwsgi_temp_path " << dir.path << "/uwsgi;\n"
      << "  scgi_temp_path " << dir.path << "/scgi;\n"
      << "  upstream ringio {\n    server 127.0.0.1:" << upstream_port[0]
      << ";\n    server 127.0.0.1:" << upstream_port[1]
      << ";\n    keepalive 16;\n"
      // nginx closes an idle upstream connection before a draining server would (1 s):
      // a connection is then never closed by the server while nginx sends on it.
      << "    keepalive_timeout 500ms;\n  }\n"
      << "  server {\n    listen 127.0.0.1:" << port << ";\n"
      << "    location / {\n      proxy_pass http://ringio;\n      proxy_http_version 1.1;\n"
      << "      proxy_set_header Connection \"\";\n"
      // No retry on another upstream: a failed request to one of them shows as a 502.
      << "      proxy_next_upstream off;\n    }\n  }\n}\n";
  child_process nginx({nginx_path, "-p", dir.path, "-c", dir.path + "/nginx.conf", "-e", dir.path + "/error.log"});
  bool up = false;
  for (int i = 0; i < 400 && !up; ++i) {
    up = get_status(port) == "HTTP/1.1 200 OK";
    if (!up) std::this_thread::sleep_for(25ms);
  }
  ASSERT_TRUE(up) << "nginx did not start; " << nginx.stderr_text();
  auto wrk = start_wrk(port, 32);
  std::this_thread::sleep_for(500ms);
  for (int i = 0; i < restarts; ++i) {
    const int u = i % 2;
    auto failure =
        restart(upstream[u], {http_server, "--port", std::to_string(upstream_port[u]), "--handover-socket", sock[u]},
                upstream_port[u], false);
    ASSERT_TRUE(failure.empty()) << "restart " << i + 1 << " (upstream " << u << "): " << failure;
    std::this_thread::sleep_for(300ms);
  }
  std::this_thread::sleep_for(300ms);
  auto report = stop_wrk(*wrk);
  EXPECT_GT(report.requests, 0U) << report.text;
  EXPECT_EQ(report.socket_errors, 0U) << report.text;
  std::ifstream log_file(dir.path + "/error.log");
  const std::string nginx_log((std::istreambuf_iterator<char>(log_file)), std::istreambuf_iterator<char>());
  EXPECT_EQ(report.non_2xx, 0U) << report.text << "nginx's error log:\n" << nginx_log;
  nginx.signal(SIGQUIT);
  EXPECT_TRUE(nginx.wait(30s));
  for (auto& s : upstream) {
    s->signal(SIGTERM);
    EXPECT_EQ(s->wait(30s), 0);
  }
}

}  // namespace
