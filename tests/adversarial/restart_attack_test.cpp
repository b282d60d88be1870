// SPDX-License-Identifier: Apache-2.0
// Restarts without dropping anyone, and ringio-top, under hostile conditions: the
// handover socket connected to by peers that take the sockets and die or say nothing,
// two successors at once, handover paths that are files, directories or too long, a
// foreign program listening on the path, ten handovers in a row under wrk, descriptors
// across generations, uploads and WebSockets open across a handover, malformed socket
// activation, --reuse-port against a port not shared; ringio-top against hostile
// metrics pages, counters that go down, a server replaced under it, odd terminal sizes
// and bad arguments. Each scenario is a Python script (restart_attack.py) that starts
// every process in its own group and stops it by id; it bounds itself with an alarm,
// and this program bounds it again.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "ringio/error.hpp"
#include "ringio/net/inherited_listeners.hpp"
#include "ringio/net/listener_handover.hpp"
#include "ringio/net/socket_address.hpp"
#include "ringio/net/stream_listener.hpp"
#include "support/child_process.hpp"

using namespace std::chrono_literals;
using ringio_test::child_process;

namespace {

constexpr const char* script = RESTART_ATTACK_SCRIPT;

// Runs one scenario; exit 77 is a skip, anything but 0 a failure with its output.
void run_scenario(const std::string& name) {
  child_process p({"/usr/bin/python3", script, HTTP_SERVER_PATH, ECHO_SERVER_PATH, RINGIO_TOP_PATH, name});
  ASSERT_TRUE(p.started());
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + 280s;
  while (std::chrono::steady_clock::now() < deadline) {
    auto l =
        p.read_line(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()));
    if (!l) break;
    out += *l + "\n";
  }
  auto st = p.wait(30s);
  if (!st) {
    p.signal(SIGTERM);  // the script stops its processes on SIGTERM
    st = p.wait(30s);
  }
  ASSERT_TRUE(st.has_value()) << "the scenario did not finish\n" << out << p.stderr_text();
  if (*st == 77) GTEST_SKIP() << out;
  EXPECT_EQ(*st, 0) << out << p.stderr_text();
}

}  // namespace

TEST(RestartAttack, SuccessorThatTakesTheSocketsAndDiesCostsNothing) {
  run_scenario("handover_peer_takes_sockets_and_dies");
}
TEST(RestartAttack, SilentHandoverClientBlocksNoRestart) { run_scenario("handover_holder_blocks_nobody"); }
TEST(RestartAttack, TwoSuccessorsRacing) { run_scenario("two_successors_race"); }
TEST(RestartAttack, FiveSuccessorsRacingThreeRounds) { run_scenario("many_successors_race"); }
TEST(RestartAttack, PredecessorThatRefusesOrDies) { run_scenario("predecessor_refuses_or_dies"); }
TEST(RestartAttack, HandoverPathRegularFile) { run_scenario("path_regular_file"); }
TEST(RestartAttack, HandoverPathDirectory) { run_scenario("path_directory"); }
TEST(RestartAttack, HandoverPathTooLong) { run_scenario("path_too_long"); }
TEST(RestartAttack, HandoverPathOfAnotherProgram) { run_scenario("stale_socket_of_another_program"); }
TEST(RestartAttack, TenHandoversUnderWrk) { run_scenario("ten_handovers_under_wrk"); }
TEST(RestartAttack, TenHandoversUnderWrkTwoThreads) { run_scenario("ten_handovers_under_wrk_threads"); }
TEST(RestartAttack, NoDescriptorLeakAcrossGenerations) { run_scenario("fd_leak_across_restarts"); }
TEST(RestartAttack, UploadAndWebSocketAcrossHandover) { run_scenario("upload_and_websocket_across_restart"); }
TEST(RestartAttack, RunningProcessKilledMidHandover) { run_scenario("old_killed_mid_handover"); }
TEST(RestartAttack, FourListenersToOneThreadAndBack) { run_scenario("handover_more_listeners_than_threads"); }
TEST(RestartAttack, HandoverToTheAcceptorDispatch) { run_scenario("handover_to_acceptor_dispatch"); }
TEST(RestartAttack, EchoConnectionsStayWithTheOldProcess) { run_scenario("echo_connections_stay_with_old"); }
TEST(RestartAttack, IdleKeepAliveClosedWhileDraining) { run_scenario("idle_keepalive_closed_while_draining"); }
TEST(RestartAttack, OldStoppedWhileDrainingKeepsThePath) { run_scenario("old_signalled_while_draining_keeps_path"); }
TEST(RestartAttack, SixtyFiveLoopsCanBeReplaced) { run_scenario("handover_65_threads"); }
TEST(RestartAttack, TopLiveViewAcrossServerRestart) { run_scenario("top_live_view_across_server_restart"); }
TEST(RestartAttack, RapidRestartsWithoutWaitingUnderWrk) { run_scenario("rapid_restarts_without_waiting_under_wrk"); }
TEST(RestartAttack, EchoTenHandoversUnderChurn) { run_scenario("echo_ten_handovers_under_churn"); }
TEST(RestartAttack, MetricsPortClashFailsTheSuccessorOnly) { run_scenario("metrics_port_clash"); }
TEST(RestartAttack, HttpPortRefusedWithRestartOptions) { run_scenario("http_port_refused_with_handover"); }
TEST(RestartAttack, FailedSuccessorsLeakNoDescriptor) { run_scenario("failed_successors_leak_nothing"); }
TEST(RestartAttack, ForgedHandoverMessagesRefused) { run_scenario("forged_handover_messages"); }
TEST(RestartAttack, UpgradeOnKeepAliveDuringHandover) { run_scenario("upgrade_on_keepalive_during_handover"); }
TEST(RestartAttack, HttpTenHandoversUnderChurn) { run_scenario("http_ten_handovers_under_churn"); }
TEST(RestartAttack, SocketActivationMalformed) { run_scenario("socket_activation_malformed"); }
TEST(RestartAttack, SocketActivationOtherPid) { run_scenario("socket_activation_other_pid"); }
TEST(RestartAttack, SocketActivationServes) { run_scenario("socket_activation_serves"); }
TEST(RestartAttack, ReusePortAgainstAnUnsharedPort) { run_scenario("reuse_port_mismatched"); }
TEST(RestartAttack, TopCountersGoingDown) { run_scenario("top_counters_backwards"); }
TEST(RestartAttack, TopHostilePages) { run_scenario("top_hostile_pages"); }
TEST(RestartAttack, TopBadArguments) { run_scenario("top_bad_arguments"); }
TEST(RestartAttack, TopAcrossHandover) { run_scenario("top_across_restart"); }
TEST(RestartAttack, TopLiveViewOddSizes) { run_scenario("tmux_odd_sizes"); }

// ---- the public API: send_listeners, receive_listeners, adopt, listeners_from_environment

namespace {

int tcp_listener() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 16) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) >= 0; }
bool has_cloexec(int fd) { return (::fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0; }
std::size_t open_fds() {
  std::size_t n = 0;
  for ([[maybe_unused]] auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

// Runs `body` in a forked child (environment, descriptors 3 and 4 and SIGPIPE are its
// own) with a 20 s alarm; the child's exit status, or 128 + the signal that ended it.
int in_child(const std::function<int()>& body) {
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::alarm(20);
    ::_exit(body());
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// Sends a raw handover message: `header` with `fds` attached.
bool send_raw(int sock, const std::string& header, const std::vector<int>& fds) {
  iovec iov{const_cast<char*>(header.data()), header.size()};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  std::vector<char> ctl(CMSG_SPACE(sizeof(int) * (fds.empty() ? 1 : fds.size())));
  if (!fds.empty()) {
    m.msg_control = ctl.data();
    m.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  return ::sendmsg(sock, &m, MSG_NOSIGNAL) == static_cast<ssize_t>(header.size());
}

std::string header(std::uint32_t version, std::uint32_t count) {
  std::string h = "RINGIOLS";
  h.append(reinterpret_cast<const char*>(&version), 4);
  h.append(reinterpret_cast<const char*>(&count), 4);
  return h;
}

}  // namespace

TEST(HandoverApi, SendToAGonePeerIsBrokenPipeNotSigpipe) {
  const int st = in_child([] {
    ::signal(SIGPIPE, SIG_DFL);
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return 3;
    ::close(sv[1]);
    int l = tcp_listener();
    auto r = ringio::send_listeners(sv[0], std::vector<int>{l}, std::chrono::seconds(2));
    if (r) return 4;
    if (r.error() != std::errc::broken_pipe) return 5;
    return is_open(l) ? 0 : 6;
  });
  EXPECT_EQ(st, 0) << "exit 4: success, 5: another error, 6: the listener was closed, 141: killed by SIGPIPE";
}

TEST(HandoverApi, SendRefusesWhatIsNotAListener) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  int l = tcp_listener();
  ASSERT_GE(l, 0);
  auto none = ringio::send_listeners(sv[0], std::vector<int>{});
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error(), std::errc::invalid_argument);
  std::vector<int> many(ringio::max_handover_listeners + 1, l);
  auto too_many = ringio::send_listeners(sv[0], many);
  ASSERT_FALSE(too_many);
  EXPECT_EQ(too_many.error(), std::errc::invalid_argument);
  int udp = ::socket(AF_INET, SOCK_DGRAM, 0);
  int unlistened = ::socket(AF_INET, SOCK_STREAM, 0);
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  for (int bad : {udp, unlistened, pipefd[0]}) {
    auto r = ringio::send_listeners(sv[0], std::vector<int>{l, bad});
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error(), ringio::errc::not_a_listener) << r.error().message();
    EXPECT_TRUE(is_open(bad));
  }
  // Nothing was sent: the peer sees no message.
  ::close(sv[0]);
  char c;
  EXPECT_EQ(::read(sv[1], &c, 1), 0);
  for (int fd : {sv[1], l, udp, unlistened, pipefd[0], pipefd[1]}) ::close(fd);
}

TEST(HandoverApi, RoundTripAdoptsWithCloexec) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  std::vector<int> ls{tcp_listener(), tcp_listener(), tcp_listener()};
  ASSERT_TRUE(ringio::send_listeners(sv[0], ls));
  auto got = ringio::receive_listeners(sv[1], std::chrono::seconds(5));
  ASSERT_TRUE(got) << got.error().message();
  ASSERT_EQ(got->size(), 3U);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(has_cloexec((*got)[i].native_handle()));
    auto mine = (*got)[i].local_address();
    ASSERT_TRUE(mine);
    sockaddr_in a{};
    socklen_t n = sizeof a;
    ::getsockname(ls[i], reinterpret_cast<sockaddr*>(&a), &n);
    EXPECT_EQ(mine->port(), ntohs(a.sin_port)) << "order of the listeners";
  }
  for (int fd : ls) ::close(fd);
  ::close(sv[0]);
  ::close(sv[1]);
}

TEST(HandoverApi, ReceiveTimesOutAndSeesTheEnd) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = ringio::receive_listeners(sv[1], std::chrono::milliseconds(300));
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), std::errc::timed_out) << r.error().message();
  EXPECT_GE(took, std::chrono::milliseconds(250));
  EXPECT_LT(took, std::chrono::seconds(10));
  // Half a header, then the end.
  ASSERT_EQ(::write(sv[0], "RINGIO", 6), 6);
  ::close(sv[0]);
  auto e = ringio::receive_listeners(sv[1], std::chrono::seconds(5));
  ASSERT_FALSE(e);
  EXPECT_TRUE(e.error() == ringio::errc::end_of_stream || e.error() == ringio::errc::invalid_handover)
      << e.error().message();
  ::close(sv[1]);
}

TEST(HandoverApi, MalformedMessagesCloseEveryReceivedDescriptor) {
  int l = tcp_listener();
  int udp = ::socket(AF_INET, SOCK_DGRAM, 0);
  struct forged {
    const char* what;
    std::string head;
    std::vector<int> fds;
    std::error_code want;
  };
  std::vector<forged> cases = {
      {"count 2, one descriptor", header(1, 2), {l}, ringio::errc::invalid_handover},
      {"count 1, two descriptors", header(1, 1), {l, l}, ringio::errc::invalid_handover},
      {"count 1, a datagram socket", header(1, 1), {udp}, ringio::errc::not_a_listener},
      {"count 2, a listener then a datagram socket", header(1, 2), {l, udp}, ringio::errc::not_a_listener},
      {"version 9", header(9, 1), {l}, ringio::errc::invalid_handover},
      {"count 65", header(1, 65), std::vector<int>(65, l), ringio::errc::invalid_handover},
      {"count 1, 250 descriptors", header(1, 1), std::vector<int>(250, l), ringio::errc::invalid_handover},
      {"count 0", header(1, 0), {}, ringio::errc::invalid_handover},
      {"bad magic", "RINGIOLX" + header(1, 1).substr(8), {l}, ringio::errc::invalid_handover},
  };
  for (const auto& c : cases) {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    const std::size_t before = open_fds();
    ASSERT_TRUE(send_raw(sv[0], c.head, c.fds)) << c.what;
    auto r = ringio::receive_listeners(sv[1], std::chrono::seconds(5));
    ASSERT_FALSE(r) << c.what;
    EXPECT_EQ(r.error(), c.want) << c.what << ": " << r.error().message();
    EXPECT_EQ(open_fds(), before) << c.what << ": received descriptors were left open";
    ::close(sv[0]);
    ::close(sv[1]);
  }
  ::close(l);
  ::close(udp);
}

TEST(HandoverApi, AdoptChecksAndLeavesRefusedDescriptors) {
  int udp = ::socket(AF_INET, SOCK_DGRAM, 0);
  int unlistened = ::socket(AF_INET, SOCK_STREAM, 0);
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  struct refused {
    int fd;
    std::errc want;
  };
  for (refused c : {refused{udp, std::errc::wrong_protocol_type}, refused{unlistened, std::errc::invalid_argument},
                    refused{pipefd[0], std::errc::not_a_socket}}) {
    const int flags = ::fcntl(c.fd, F_GETFD);
    auto r = ringio::stream_listener::adopt(c.fd);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), c.want) << r.error().message();
    EXPECT_TRUE(is_open(c.fd));
    EXPECT_EQ(::fcntl(c.fd, F_GETFD), flags) << "the refused descriptor was changed";
    ::close(c.fd);
  }
  ::close(pipefd[1]);
  int closed = ::socket(AF_INET, SOCK_STREAM, 0);
  ::close(closed);
  auto c = ringio::stream_listener::adopt(closed);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error(), std::errc::bad_file_descriptor) << c.error().message();
  // A listening Unix stream socket listens too.
  int u = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "ringio-adopt-%d", static_cast<int>(::getpid()));
  ASSERT_EQ(::bind(u, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(u, 4), 0);
  auto ok = ringio::stream_listener::adopt(u);
  ASSERT_TRUE(ok) << ok.error().message();
  EXPECT_TRUE(has_cloexec(u));
}

namespace {

// Sets fds 3 and 4 (a listener and `four`, or closed) and the variables, then reads them.
int activation_case(const char* fds_var, const char* names, int four,
                    const std::function<int(const ringio::result<std::vector<ringio::inherited_listener>>&)>& check) {
  // Move everything above the descriptors the variables name before placing them.
  const int high_l = ::fcntl(tcp_listener(), F_DUPFD, 100);
  const int high_four = four >= 0 ? ::fcntl(four, F_DUPFD, 100) : -1;
  ::dup2(high_l, 3);
  ::fcntl(3, F_SETFD, 0);
  if (high_four >= 0) {
    ::dup2(high_four, 4);
    ::fcntl(4, F_SETFD, 0);
  } else {
    ::close(4);
  }
  ::setenv("LISTEN_PID", std::to_string(::getpid()).c_str(), 1);
  ::setenv("LISTEN_FDS", fds_var, 1);
  if (names != nullptr) ::setenv("LISTEN_FDNAMES", names, 1);
  else ::unsetenv("LISTEN_FDNAMES");
  auto r = ringio::listeners_from_environment();
  if (std::getenv("LISTEN_PID") != nullptr || std::getenv("LISTEN_FDS") != nullptr ||
      std::getenv("LISTEN_FDNAMES") != nullptr)
    return 90;
  return check(r);
}

}  // namespace

TEST(SocketActivationApi, ErrorsTakeNothingOverAndCloseNothing) {
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  const int st = in_child([&] {
    return activation_case("2", nullptr, pipefd[0], [](const auto& r) {
      if (r) return 10;
      if (r.error() != ringio::errc::not_a_listener) return 11;
      if (!is_open(3) || !is_open(4)) return 12;
      if (has_cloexec(3)) return 13;  // left as it was
      return 0;
    });
  });
  EXPECT_EQ(st, 0) << "10: accepted a pipe, 11: another error, 12: closed a descriptor, 13: changed "
                      "FD_CLOEXEC on error, 90: variables not unset";
}

TEST(SocketActivationApi, NamesAndCloexec) {
  EXPECT_EQ(in_child([] {
              return activation_case("1", "web", -1, [](const auto& r) {
                if (!r || r->size() != 1) return 20;
                if ((*r)[0].name != "web") return 21;
                return has_cloexec((*r)[0].listener.native_handle()) ? 0 : 22;
              });
            }),
            0);
  EXPECT_EQ(in_child([] {
              return activation_case("1", nullptr, -1, [](const auto& r) {
                if (!r || r->size() != 1) return 20;
                return (*r)[0].name == "unknown" ? 0 : 21;
              });
            }),
            0);
}

TEST(SocketActivationApi, MalformedVariables) {
  struct v {
    const char* fds;
    const char* names;
  };
  for (v c :
       {v{"1", ""}, v{"1", "a:b"}, v{"2", "a"}, v{"0", nullptr}, v{"-1", nullptr}, v{"x", nullptr}, v{"", nullptr},
        v{"99999999999999999999", nullptr}, v{"2147483647", nullptr}, v{"4294967297", nullptr}, v{"1", "a::"}}) {
    const auto t0 = std::chrono::steady_clock::now();
    const int st = in_child([&] {
      return activation_case(c.fds, c.names, -1, [](const auto& r) {
        if (r) return 30;
        if (r.error() != ringio::errc::invalid_listen_fds && r.error() != std::errc::bad_file_descriptor) return 31;
        return is_open(3) ? 0 : 32;
      });
    });
    EXPECT_EQ(st, 0) << "LISTEN_FDS=" << c.fds << " LISTEN_FDNAMES=" << (c.names ? c.names : "(unset)")
                     << " (30: accepted, 31: another error, 32: closed fd 3, 90: variables left, 142: ran 20 s)";
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  }
}

TEST(SocketActivationApi, AnotherProcessOrNone) {
  EXPECT_EQ(in_child([] {
              ::unsetenv("LISTEN_PID");
              ::setenv("LISTEN_FDS", "1", 1);
              auto r = ringio::listeners_from_environment();
              return r && r->empty() ? 0 : 40;
            }),
            0);
  EXPECT_EQ(in_child([] {
              ::setenv("LISTEN_PID", "1", 1);
              ::setenv("LISTEN_FDS", "1", 1);
              auto r = ringio::listeners_from_environment();
              if (!r || !r->empty()) return 41;
              return std::getenv("LISTEN_FDS") == nullptr ? 0 : 42;
            }),
            0);
}
