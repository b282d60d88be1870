// SPDX-License-Identifier: Apache-2.0
// http_server --metrics-port: the /metrics page read by the prometheus_client parser
// and scraped by a real Prometheus server, its values checked against the requests
// the test made.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include "http/http_client.hpp"
#include "support/child_process.hpp"
#include "support/loopback.hpp"

using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

constexpr const char* server = HTTP_SERVER_PATH;
constexpr const char* parse_script = METRICS_PARSE_SCRIPT;
// Debian's interpreter: the one python3-prometheus-client installs into.
constexpr const char* python = "/usr/bin/python3";
constexpr const char* prometheus = "/usr/bin/prometheus";

// The port after "127.0.0.1:" in the next line of stdout (0: none).
std::uint16_t port_in_next_line(child_process& p) {
  auto line = p.read_line(10s);
  if (!line) return 0;
  auto pos = line->find("127.0.0.1:");
  return pos == std::string::npos ? 0 : static_cast<std::uint16_t>(std::stoi(line->substr(pos + 10)));
}

int run_to_exit(std::vector<std::string> argv) {
  child_process p(std::move(argv));
  return p.wait(10s).value_or(-1);
}

// A server with --metrics-port 0: its HTTP port and its metrics port.
struct metrics_server {
  child_process process;
  std::uint16_t port = 0;
  std::uint16_t metrics_port = 0;

  explicit metrics_server(unsigned threads)
      : process({server, "--port", "0", "--threads", std::to_string(threads), "--metrics-port", "0"}) {
    port = port_in_next_line(process);
    metrics_port = port_in_next_line(process);
  }
  ~metrics_server() {
    process.signal(SIGTERM);
    EXPECT_EQ(process.wait(10s), std::optional<int>(0));
  }
  metrics_server(const metrics_server&) = delete;
  metrics_server& operator=(const metrics_server&) = delete;
};

// `ok` requests to / and `missing` to a path with no route, on one connection.
void make_requests(std::uint16_t port, int ok, int missing) {
  http_client c(port);
  for (int i = 0; i < ok; ++i) {
    auto r = c.exchange(get_request("/"));
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200);
  }
  for (int i = 0; i < missing; ++i) {
    auto r = c.exchange(get_request("/missing"));
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 404);
  }
}

class temp_dir {
 public:
  temp_dir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ringio-metrics-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~temp_dir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

TEST(HttpServerMetricsCli, BadMetricsPortPrintsUsageAndExitsTwo) {
  EXPECT_EQ(run_to_exit({server, "--port", "0", "--metrics-port", "70000"}), 2);
  EXPECT_EQ(run_to_exit({server, "--port", "0", "--metrics-port", "x"}), 2);
}

TEST(HttpServerMetricsPage, PageParsesWithPrometheusClientAndCountsTheRequests) {
  if (::access(python, X_OK) != 0) GTEST_SKIP() << python << " is missing (Debian's python3)";
  metrics_server s(2);
  ASSERT_NE(s.port, 0) << s.process.stderr_text();
  ASSERT_NE(s.metrics_port, 0) << s.process.stderr_text();
  make_requests(s.port, 7, 2);

  http_client c(s.metrics_port);
  auto page = c.exchange(get_request("/metrics"));
  ASSERT_TRUE(page);
  ASSERT_EQ(page->status, 200);
  EXPECT_EQ(page->header("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  temp_dir dir;
  ASSERT_FALSE(dir.path().empty());
  const auto file = dir.path() / "page.txt";
  std::ofstream(file) << page->body;

  child_process parser({python, parse_script, file.string()});
  std::map<std::string, double> samples;
  while (auto line = parser.read_line(10s)) {
    auto space = line->rfind(' ');
    samples[line->substr(0, space)] = std::stod(line->substr(space + 1));
  }
  auto status = parser.wait(10s);
  if (status == std::optional<int>(3)) GTEST_SKIP() << "python3-prometheus-client is not installed";
  ASSERT_EQ(status, std::optional<int>(0)) << parser.stderr_text() << page->body;

  // The test's requests, and nothing else: /metrics is served by a server of its own.
  EXPECT_EQ(samples["ringio_http_responses_total{class=2xx}"], 7);
  EXPECT_EQ(samples["ringio_http_responses_total{class=4xx}"], 2);
  EXPECT_EQ(samples["ringio_http_responses_total{class=5xx}"], 0);
  EXPECT_EQ(samples["ringio_http_request_duration_seconds_count{}"], 9);
  EXPECT_EQ(samples["ringio_http_request_duration_seconds_bucket{le=+Inf}"], 9);
  EXPECT_GT(samples["ringio_http_request_bytes_total{}"], 0);
  EXPECT_GT(samples["ringio_http_response_bytes_total{}"], 0);
  // One sample per loop, and loop work that the requests must have caused.
  for (const char* loop : {"0", "1"}) {
    const std::string l = std::string("loop=") + loop;
    EXPECT_TRUE(samples.contains("ringio_loop_iterations_total{" + l + "}")) << l;
    EXPECT_TRUE(samples.contains("ringio_loop_run_seconds_count{" + l + "}")) << l;
  }
  const double received =
      samples["ringio_loop_bytes_received_total{loop=0}"] + samples["ringio_loop_bytes_received_total{loop=1}"];
  EXPECT_GE(received, samples["ringio_http_request_bytes_total{}"]);
  EXPECT_GT(samples["ringio_operations_started_total{kind=io,loop=0}"] +
                samples["ringio_operations_started_total{kind=io,loop=1}"],
            0);
}

// The value of an instant query's first result ("value":[time,"V"]), or nullopt.
std::optional<double> query(std::uint16_t prometheus_port, const std::string& promql) {
  http_client c(prometheus_port);
  auto r = c.exchange(get_request("/api/v1/query?query=" + promql));
  if (!r || r->status != 200) return std::nullopt;
  auto at = r->body.find("\"value\":[");
  if (at == std::string::npos) return std::nullopt;
  auto open = r->body.find('"', r->body.find(',', at));
  auto close = r->body.find('"', open + 1);
  if (open == std::string::npos || close == std::string::npos) return std::nullopt;
  return std::stod(r->body.substr(open + 1, close - open - 1));
}

TEST(HttpServerMetricsPage, PrometheusScrapesTheCountOfRequestsMade) {
  if (::access(prometheus, X_OK) != 0) GTEST_SKIP() << prometheus << " is missing (Debian package prometheus)";
  metrics_server s(1);
  ASSERT_NE(s.metrics_port, 0) << s.process.stderr_text();
  constexpr int requests = 11;
  make_requests(s.port, requests, 0);

  temp_dir dir;
  ASSERT_FALSE(dir.path().empty());
  std::ofstream(dir.path() / "prometheus.yml")
      << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
      << "scrape_configs:\n  - job_name: ringio\n    static_configs:\n      - targets: ['127.0.0.1:" << s.metrics_port
      << "']\n";
  std::uint16_t web_port = 0;
  {
    auto probe = listen_loopback();  // a free port for Prometheus (closed before it binds)
    web_port = address_of(probe).port();
  }
  child_process prom({prometheus, "--config.file=" + (dir.path() / "prometheus.yml").string(),
                      "--storage.tsdb.path=" + (dir.path() / "data").string(),
                      "--web.listen-address=127.0.0.1:" + std::to_string(web_port), "--log.level=warn"});
  ASSERT_TRUE(prom.started());

  // Exactly the requests made: they all finished before Prometheus started, and the
  // page's own requests are counted by a server of their own.
  const std::string promql = "sum(ringio_http_responses_total%7Bclass%3D%222xx%22%7D)";
  std::optional<double> seen;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < deadline) {
    seen = query(web_port, promql);
    if (seen) break;
    std::this_thread::sleep_for(200ms);
  }
  ASSERT_TRUE(seen) << "no sample scraped within 60 s: " << prom.stderr_text();
  EXPECT_EQ(*seen, requests);
  auto iterations = query(web_port, "sum(ringio_loop_iterations_total)");
  ASSERT_TRUE(iterations);
  EXPECT_GT(*iterations, 0);
  prom.signal(SIGTERM);
  EXPECT_TRUE(prom.wait(20s).has_value());
}

}  // namespace
