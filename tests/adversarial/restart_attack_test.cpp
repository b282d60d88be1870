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
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <string>

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
TEST(RestartAttack, SocketActivationMalformed) { run_scenario("socket_activation_malformed"); }
TEST(RestartAttack, SocketActivationOtherPid) { run_scenario("socket_activation_other_pid"); }
TEST(RestartAttack, SocketActivationServes) { run_scenario("socket_activation_serves"); }
TEST(RestartAttack, ReusePortAgainstAnUnsharedPort) { run_scenario("reuse_port_mismatched"); }
TEST(RestartAttack, TopCountersGoingDown) { run_scenario("top_counters_backwards"); }
TEST(RestartAttack, TopHostilePages) { run_scenario("top_hostile_pages"); }
TEST(RestartAttack, TopBadArguments) { run_scenario("top_bad_arguments"); }
TEST(RestartAttack, TopAcrossHandover) { run_scenario("top_across_restart"); }
TEST(RestartAttack, TopLiveViewOddSizes) { run_scenario("tmux_odd_sizes"); }
