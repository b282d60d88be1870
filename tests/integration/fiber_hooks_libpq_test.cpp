// SPDX-License-Identifier: Apache-2.0
// libpq's blocking API (PQconnectdb, PQexec), unmodified, on fibers made cooperative by
// the system-call hooks, against a throw-away PostgreSQL cluster (initdb in a temporary
// directory, the server on a Unix socket there, run as `nobody` since PostgreSQL
// refuses root): 100 fibers running queries concurrently on one loop, every result
// checked; the same client on plain threads gives the same results.
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ringio/fiber.hpp"
#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/child_process.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

constexpr const char* pg_bin = "/usr/lib/postgresql/15/bin";
constexpr const char* setpriv = "/usr/bin/setpriv";
constexpr int queries = 10;
#ifdef RINGIO_SANITIZED
constexpr std::size_t client_stack = 1024 * 1024;
#else
constexpr std::size_t client_stack = 256 * 1024;
#endif

// Runs argv (as `nobody` when this process is root) to its end; its exit status.
std::vector<std::string> as_server_user(std::vector<std::string> argv) {
  if (::geteuid() != 0) return argv;
  std::vector<std::string> v{setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups"};
  v.insert(v.end(), argv.begin(), argv.end());
  return v;
}

// One client as blocking C code writes it: connect, then `queries` queries whose
// results it checks. The number of correct results, or -1 when the connection failed.
int run_client(const std::string& conninfo, int id, std::string* first_error) {
  PGconn* c = PQconnectdb(conninfo.c_str());
  if (PQstatus(c) != CONNECTION_OK) {
    if (first_error != nullptr && first_error->empty()) *first_error = PQerrorMessage(c);
    PQfinish(c);
    return -1;
  }
  int correct = 0;
  for (int i = 0; i < queries; ++i) {
    const long a = id * 1000L + i;
    const std::string sql = "SELECT " + std::to_string(a) + " * 2, pg_sleep(0.001)";
    PGresult* r = PQexec(c, sql.c_str());
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 &&
        std::string(PQgetvalue(r, 0, 0)) == std::to_string(a * 2))
      ++correct;
    else if (first_error != nullptr && first_error->empty()) *first_error = PQerrorMessage(c);
    PQclear(r);
  }
  PQfinish(c);
  return correct;
}

class FiberHooksLibpq : public backend_test {
 protected:
  void SetUp() override {
    backend_test::SetUp();
    if (IsSkipped()) return;
    if (GetParam() == backend_kind::sim)
      GTEST_SKIP() << "the hooks wait on real descriptors; sim is not a loop for them";
    const std::string initdb = std::string(pg_bin) + "/initdb";
    if (::access(initdb.c_str(), X_OK) != 0) GTEST_SKIP() << initdb << " not installed (Debian postgresql)";
    if (::geteuid() == 0 && ::access(setpriv, X_OK) != 0) GTEST_SKIP() << "running as root without " << setpriv;
    char tmpl[] = "/tmp/ringio_pg_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    if (::geteuid() == 0) {
      ASSERT_EQ(::chown(dir_.c_str(), 65534, 65534), 0);
    }
    ::chmod(dir_.c_str(), 0755);
    child_process init(as_server_user({initdb, "-D", dir_ + "/data", "-U", "postgres", "--auth=trust", "-E", "UTF8",
                                       "--no-sync", "--no-instructions"}));
    ASSERT_TRUE(init.started());
    const auto status = init.wait(120s);
    if (!status || *status != 0) GTEST_SKIP() << "initdb could not make a cluster: " << init.stderr_text();
    server_ = std::make_unique<child_process>(as_server_user(
        {std::string(pg_bin) + "/postgres", "-D", dir_ + "/data", "-k", dir_, "-p", "54329", "-c",
         "listen_addresses=", "-c", "max_connections=150", "-c", "fsync=off", "-c", "logging_collector=off"}));
    ASSERT_TRUE(server_->started());
    conninfo_ = "host=" + dir_ + " port=54329 user=postgres dbname=postgres";
    const auto until = std::chrono::steady_clock::now() + 30s;
    while (PQping(conninfo_.c_str()) != PQPING_OK) {
      ASSERT_LT(std::chrono::steady_clock::now(), until) << "postgres did not come up: " << server_->stderr_text();
      std::this_thread::sleep_for(50ms);
    }
  }
  void TearDown() override {
    if (server_ != nullptr) {
      ::kill(server_->pid(), SIGINT);  // fast shutdown, by PID
      (void)server_->wait(30s);
      server_.reset();
    }
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
    backend_test::TearDown();
  }
  const std::string& conninfo() const { return conninfo_; }

 private:
  std::string dir_;
  std::string conninfo_;
  std::unique_ptr<child_process> server_;
};

TEST_P(FiberHooksLibpq, AHundredBlockingClientsQueryConcurrentlyOnOneLoop) {
  constexpr int n = 100;
  std::vector<int> correct(n, -2);
  std::string first_error;
  const auto t0 = std::chrono::steady_clock::now();
  run([](const std::string& conninfo, std::vector<int>& correct, std::string& err) -> task<void> {
    scope clients;
    for (std::size_t i = 0; i < correct.size(); ++i)
      spawn_fiber(
          clients, [&conninfo, i, &correct, &err] { correct[i] = run_client(conninfo, static_cast<int>(i), &err); },
          fiber_options{.stack_size = client_stack});
    co_await clients.join();
  }(conninfo(), correct, first_error));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("hooked libpq: %d clients x %d queries on one loop (%s): %.3f s\n", n, queries,
              to_string(GetParam()).data(), seconds);
  EXPECT_EQ(std::count(correct.begin(), correct.end(), queries), n) << "first error: " << first_error;
}

TEST_P(FiberHooksLibpq, TheSameClientsOnPlainThreadsGiveTheSameResults) {
  constexpr int threads = 8;
  std::vector<int> correct(threads, -2);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] { correct[static_cast<std::size_t>(t)] = run_client(conninfo(), 500 + t, nullptr); });
  for (auto& th : pool) th.join();
  for (int t = 0; t < threads; ++t) EXPECT_EQ(correct[static_cast<std::size_t>(t)], queries) << "thread " << t;
}

RINGIO_ALL_BACKENDS(FiberHooksLibpq);

}  // namespace
