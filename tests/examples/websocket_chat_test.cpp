// SPDX-License-Identifier: Apache-2.0
// examples/websocket_chat as a browser would use it: the page at "/", then two members
// on "/chat" (Python's websockets) seeing each other's lines; SIGTERM stops it cleanly.
#include <gtest/gtest.h>

#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <string>

#include "support/child_process.hpp"

using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

// A Python with the websockets package: the first python3 on PATH, else the system's.
std::string python_with_websockets() {
  for (const char* p : {"python3", "/usr/bin/python3"}) {
    const std::string probe = std::string(p) + " -c 'import websockets' >/dev/null 2>&1";
    if (std::system(probe.c_str()) == 0) return p;
  }
  return {};
}

}  // namespace

TEST(WebSocketChatExample, MembersSeeEachOthersLines) {
  const std::string python = python_with_websockets();
  if (python.empty()) GTEST_SKIP() << "python3 websockets is not installed (Debian: python3-websockets)";
  child_process chat({WEBSOCKET_CHAT_PATH, "0"});
  ASSERT_TRUE(chat.started());
  auto line = chat.read_line(10s);
  ASSERT_TRUE(line);
  const auto colon = line->rfind(':');
  ASSERT_NE(colon, std::string::npos) << *line;
  const std::string port = std::to_string(std::stoi(line->substr(colon + 1)));
  if (::access("/usr/bin/curl", X_OK) == 0) {
    child_process page({"/usr/bin/curl", "-s", "http://127.0.0.1:" + port + "/"});
    auto first = page.read_line(10s);
    EXPECT_EQ(first.value_or(""), "<!doctype html>");
    EXPECT_EQ(page.wait(10s), 0);
  }
  child_process members({python, WEBSOCKET_CHAT_CHECK, port});
  auto result = members.read_line(20s);
  EXPECT_EQ(result.value_or(""), "ok") << members.stderr_text();
  EXPECT_EQ(members.wait(10s), 0);
  chat.signal(SIGTERM);
  EXPECT_EQ(chat.wait(15s), 0);
}
