// SPDX-License-Identifier: Apache-2.0
// examples/websocket_chat as its users would use it: headless Chromium loads the page,
// whose script joins the room over WebSocket; two members (Python's websockets) see
// each other's lines; SIGTERM stops it cleanly.
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
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

// Starts the example on a free port; its port, or "" when it did not start.
std::string start_chat(child_process& chat) {
  if (!chat.started()) return {};
  auto line = chat.read_line(10s);
  if (!line) return {};
  const auto colon = line->rfind(':');
  if (colon == std::string::npos) return {};
  return std::to_string(std::stoi(line->substr(colon + 1)));
}

}  // namespace

TEST(WebSocketChatExample, ChromiumJoinsTheRoom) {
  if (::access("/usr/bin/chromium", X_OK) != 0)
    GTEST_SKIP() << "chromium is not installed (make deps-test installs it)";
  const std::string python = python_with_websockets();
  if (python.empty()) GTEST_SKIP() << "python3 websockets is not installed (Debian: python3-websockets)";
  child_process chat({WEBSOCKET_CHAT_PATH, "0"});
  const std::string port = start_chat(chat);
  ASSERT_FALSE(port.empty());
  char tmpl[] = "/tmp/ringio-chromium-XXXXXX";
  const std::string profile = ::mkdtemp(tmpl);
  const std::string url = "http://127.0.0.1:" + port + "/";
  // Through sh so that Chromium's chatty stderr goes nowhere (a full pipe would stall it).
  // The page is asked over DevTools, in real time: a virtual-time budget can run out
  // before a slow machine has carried the WebSocket's first message.
  const std::string cmd =
      "exec /usr/bin/chromium --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking"
      " --disable-component-update --disable-sync --disable-quic --remote-debugging-port=0 --user-data-dir='" +
      profile + "' " + url + " >/dev/null 2>&1";
  child_process browser({"/bin/sh", "-c", cmd});
  // The page's script joined over WebSocket and shows what the room sent it.
  child_process page({python, CHROMIUM_PAGE_TEXT, profile, url, "log", "* guest1 joined", "60"});
  const auto shown = page.read_line(70s);
  EXPECT_EQ(page.wait(10s), 0) << shown.value_or("(nothing)");
  EXPECT_NE(shown.value_or("").find("* guest1 joined"), std::string::npos) << shown.value_or("(nothing)");
  browser.signal(SIGTERM);
  EXPECT_TRUE(browser.wait(20s).has_value());
  std::filesystem::remove_all(profile);
  chat.signal(SIGTERM);
  EXPECT_EQ(chat.wait(15s), 0);
}

TEST(WebSocketChatExample, MembersSeeEachOthersLines) {
  const std::string python = python_with_websockets();
  if (python.empty()) GTEST_SKIP() << "python3 websockets is not installed (Debian: python3-websockets)";
  child_process chat({WEBSOCKET_CHAT_PATH, "0"});
  const std::string port = start_chat(chat);
  ASSERT_FALSE(port.empty());
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
