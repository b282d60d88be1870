// SPDX-License-Identifier: Apache-2.0
// libcurl's easy API (curl_easy_perform), unmodified, on fibers made cooperative by the
// system-call hooks, against ringio's HTTP server running on a thread of its own in
// this process: 50 fibers on one loop, each fetching several bodies over one keep-alive
// connection, every body checked, and a task on the same loop measuring the longest
// stall. libcurl makes its sockets non-blocking and waits in poll(2) on them and its
// wake-up socket pair, so the poll hook does the waiting. The same client on plain
// threads gives the same bodies.
#include <curl/curl.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "fiber_hooks_support.hpp"
#include "ringio/http/router.hpp"
#include "ringio/http/server.hpp"
#include "ringio/sync_wait.hpp"
#include "support/loop_stall_meter.hpp"
#include "support/loopback.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

#ifdef RINGIO_SANITIZED
constexpr std::size_t client_stack = 1024 * 1024;
#else
constexpr std::size_t client_stack = 256 * 1024;
#endif
constexpr int fibers = 50;
constexpr int gets_per_client = 5;

// The body the server sends for /item/<name>: 16 KiB and more, so that a response
// takes several receives.
std::string body_for(std::string_view name) {
  std::string line = "item " + std::string(name) + "\n";
  std::string body;
  while (body.size() < 16 * 1024) body += line;
  return body;
}

std::size_t append_body(char* data, std::size_t size, std::size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// One client as a blocking C program writes it: one easy handle (one keep-alive
// connection), several GETs, each status and body checked. Returns the number of
// correct bodies; the first error goes to `first_error` when it is empty.
int run_client(int port, int id, std::string* first_error) {
  CURL* c = curl_easy_init();
  if (c == nullptr) return -1;
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &append_body);
  int correct = 0;
  for (int i = 0; i < gets_per_client; ++i) {
    const std::string name = std::to_string(id) + "-" + std::to_string(i);
    const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/item/" + name;
    std::string body;
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
    const CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    if (rc == CURLE_OK && status == 200 && body == body_for(name)) ++correct;
    else if (first_error != nullptr && first_error->empty())
      *first_error = rc != CURLE_OK ? curl_easy_strerror(rc) : "status " + std::to_string(status) + " or wrong body";
  }
  curl_easy_cleanup(c);
  return correct;
}

class FiberHooksCurl : public fiber_hooks_test {
 protected:
  static void SetUpTestSuite() { curl_global_init(CURL_GLOBAL_DEFAULT); }
  static void TearDownTestSuite() { curl_global_cleanup(); }

  void SetUp() override {
    fiber_hooks_test::SetUp();
    if (IsSkipped()) return;
    // Each answer takes 10 ms: the clients' requests overlap only if none of their
    // calls blocks the loop.
    routes_.prefix(http::method::get, "/item/", [this](http::request& q) -> task<http::response> {
      const int now = ++in_flight_;
      int seen = most_in_flight_.load();
      while (now > seen && !most_in_flight_.compare_exchange_weak(seen, now)) {
      }
      (void)co_await sleep_for(10ms);
      --in_flight_;
      co_return http::response::text(200, body_for(q.route_rest()));
    });
    server_ = std::make_unique<http::server>(routes_);
    listener_ = listen_loopback();
    port_ = address_of(listener_).port();
    thread_ = std::thread([this, backend = GetParam()] {
      io_context server_ctx(io_context_options{.backend = backend, .quiet = true});
      sync_wait(server_ctx, server_->serve(listener_, stop_.get_token()));
    });
  }
  void TearDown() override {
    if (thread_.joinable()) {
      stop_.request_stop();
      thread_.join();
    }
    fiber_hooks_test::TearDown();
  }
  int port() const { return port_; }
  /// The most requests the server had in its handler at once.
  int most_in_flight() const { return most_in_flight_.load(); }

 private:
  std::atomic<int> in_flight_{0};
  std::atomic<int> most_in_flight_{0};
  http::router routes_;
  std::unique_ptr<http::server> server_;
  stream_listener listener_;
  int port_ = 0;
  std::stop_source stop_;
  std::thread thread_;
};

TEST_P(FiberHooksCurl, FiftyFibersFetchTheirBodiesOnOneLoop) {
  std::vector<int> correct(fibers, -2);
  std::string first_error;
  stall_record stalls;
  const auto t0 = std::chrono::steady_clock::now();
  run([](int port, std::vector<int>& correct, std::string& err, stall_record& stalls) -> task<void> {
    std::atomic<bool> running{true};
    std::atomic<bool> started{false};
    scope meter;
    meter.spawn(stall_meter(running, started, stalls));
    scope clients;
    for (std::size_t i = 0; i < correct.size(); ++i)
      spawn_fiber(
          clients, [port, i, &correct, &err] { correct[i] = run_client(port, static_cast<int>(i), &err); },
          fiber_options{.stack_size = client_stack});
    started = true;
    co_await clients.join();
    running = false;
    co_await meter.join();
  }(port(), correct, first_error, stalls));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const long answered = std::count(correct.begin(), correct.end(), gets_per_client);
  const double ms_all = std::chrono::duration<double, std::milli>(stalls.longest).count();
  const double ms_after = std::chrono::duration<double, std::milli>(stalls.longest_after_start).count();
  std::printf(
      "hooked libcurl: %d fibers x %d GETs on one loop (%s): %.3f s; longest loop stall %.3f ms (%.3f ms once every "
      "client was spawned), %ld ticks of 1 ms\n",
      fibers, gets_per_client, to_string(GetParam()).data(), seconds, ms_all, ms_after, stalls.ticks);
  RecordProperty("longest_stall_us", static_cast<int>(stalls.longest.count() / 1000));
  RecordProperty("longest_stall_after_start_us", static_cast<int>(stalls.longest_after_start.count() / 1000));
  EXPECT_EQ(answered, fibers) << "first error: " << first_error;
  EXPECT_GT(stalls.ticks, 0) << "the loop never ran while the clients worked";
  EXPECT_GT(most_in_flight(), 1) << "the fibers' requests never overlapped: a call blocked the loop";
}

TEST_P(FiberHooksCurl, TheSameClientsOnPlainThreadsGetTheSameBodies) {
  constexpr int threads = 4;
  std::vector<int> correct(threads, -2);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] { correct[static_cast<std::size_t>(t)] = run_client(port(), 1000 + t, nullptr); });
  for (auto& th : pool) th.join();
  for (int t = 0; t < threads; ++t) EXPECT_EQ(correct[static_cast<std::size_t>(t)], gets_per_client) << "thread " << t;
  std::string first_error;
  EXPECT_EQ(run_client(port(), 2000, &first_error), gets_per_client) << first_error;
}

RINGIO_ALL_BACKENDS(FiberHooksCurl);

}  // namespace
