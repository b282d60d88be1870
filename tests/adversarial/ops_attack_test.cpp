// SPDX-License-Identifier: Apache-2.0
// Programs against the operations promises (docs/operations.md): ringio-doctor under
// seccomp filters, odd limits, hostile environments and bad arguments; the loop and
// HTTP server metrics counted exactly for known workloads; the Prometheus pages read
// by prometheus_client's parser; the metrics endpoints of the apps and of an in-process
// server scraped under load, slowly, and while everything shuts down.
#include <arpa/inet.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "ringio/doctor/diagnose.hpp"
#include "ringio/fiber.hpp"
#include "ringio/http/metrics_handler.hpp"
#include "ringio/http/router.hpp"
#include "ringio/http/server.hpp"
#include "ringio/http/server_metrics_exposition.hpp"
#include "ringio/io_context.hpp"
#include "ringio/metrics/loop_metrics_exposition.hpp"
#include "ringio/metrics/prometheus_writer.hpp"
#include "ringio/post.hpp"
#include "ringio/runtime.hpp"
#include "ringio/sync/event.hpp"
#include "ringio/sync_wait.hpp"
#include "ringio/time/sleep.hpp"
#include "ringio/time/timeout.hpp"
#include "ringio/when_all.hpp"
#include "support/backend_test.hpp"
#include "support/confined_process.hpp"
#include "support/doctor_run.hpp"
#include "support/loopback.hpp"
#include "support/sanitizer.hpp"
#include "support/syscall_filter.hpp"

using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t io = 0, timer = 1;
constexpr const char* python = "/usr/bin/python3";

// ---------------------------------------------------------------------------------
// Helpers: a blocking HTTP client, the prometheus_client parser, the apps.

struct http_answer {
  int status = 0;
  std::string head;
  std::string body;
};

int connect_loopback(std::uint16_t port, int rcvbuf = 0) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (rcvbuf > 0) ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

bool send_text(int fd, std::string_view s) {
  while (!s.empty()) {
    ssize_t n = ::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    s.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

std::string dechunk(const std::string& b) {
  std::string out;
  std::size_t pos = 0;
  for (;;) {
    auto nl = b.find("\r\n", pos);
    if (nl == std::string::npos) return out;
    std::size_t len = std::stoul(b.substr(pos, nl - pos), nullptr, 16);
    if (len == 0) return out;
    out.append(b, nl + 2, len);
    pos = nl + 2 + len + 2;
  }
}

// One request on a fresh connection (Connection: close), read to the end.
std::optional<http_answer> http_get(std::uint16_t port, std::string_view path) {
  int fd = connect_loopback(port);
  if (fd < 0) return std::nullopt;
  std::string req = "GET ";
  req.append(path).append(" HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
  std::string all;
  if (send_text(fd, req)) {
    char buf[16384];
    ssize_t n;
    while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) all.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  auto end = all.find("\r\n\r\n");
  if (end == std::string::npos || all.size() < 12) return std::nullopt;
  http_answer a;
  a.status = std::atoi(all.c_str() + 9);
  a.head = all.substr(0, end + 2);
  a.body = all.substr(end + 4);
  if (a.head.find("Transfer-Encoding: chunked") != std::string::npos) a.body = dechunk(a.body);
  return a;
}

// Reads the Prometheus page with prometheus_client's parser and checks what the
// format demands of histograms (le ascending, cumulative counts, +Inf last and equal
// to _count, a _sum); every family must have a TYPE. Prints one line per sample:
// `name{label="value",...} value` (labels sorted, values JSON-quoted).
constexpr const char* parser_script = R"PY(
import sys, json, math
from prometheus_client.parser import text_string_to_metric_families
text = open(sys.argv[1]).read()
errors = []
for f in text_string_to_metric_families(text):
    if f.type in ('unknown', 'untyped'):
        errors.append('family %s has no TYPE' % f.name)
    print('family %s %s %s' % (f.name, f.type, json.dumps(f.documentation)))
    if f.type == 'histogram':
        groups = {}
        for s in f.samples:
            key = tuple(sorted((k, v) for k, v in s.labels.items() if k != 'le'))
            g = groups.setdefault(key, {'b': [], 'count': None, 'sum': None})
            if s.name.endswith('_bucket'): g['b'].append((float(s.labels['le']), s.value))
            elif s.name.endswith('_count'): g['count'] = s.value
            elif s.name.endswith('_sum'): g['sum'] = s.value
        for key, g in groups.items():
            b = g['b']
            if not b or b[-1][0] != math.inf: errors.append('%s%s: last bucket is not +Inf' % (f.name, key))
            for i in range(1, len(b)):
                if b[i][0] <= b[i-1][0]: errors.append('%s%s: le not ascending' % (f.name, key))
                if b[i][1] < b[i-1][1]: errors.append('%s%s: buckets not cumulative' % (f.name, key))
            if b and g['count'] != b[-1][1]: errors.append('%s%s: +Inf %r != count %r' % (f.name, key, b[-1][1], g['count']))
            if g['sum'] is None: errors.append('%s%s: no _sum' % (f.name, key))
    for s in f.samples:
        labels = ','.join('%s=%s' % (k, json.dumps(v)) for k, v in sorted(s.labels.items()))
        print('%s{%s} %r' % (s.name, labels, s.value))
for e in errors: print('ERROR', e, file=sys.stderr)
sys.exit(1 if errors else 0)
)PY";

struct parsed_page {
  bool ok = false;
  std::string error;
  std::map<std::string, double> samples;           // name{labels} -> value
  std::map<std::string, std::string> family_type;  // family -> type
  std::map<std::string, std::string> family_help;  // family -> HELP (JSON-quoted)
  [[nodiscard]] double at(const std::string& key) const {
    auto it = samples.find(key);
    return it == samples.end() ? -1 : it->second;
  }
  [[nodiscard]] double sum_of(const std::string& prefix) const {
    double s = 0;
    for (auto& [k, v] : samples)
      if (k.rfind(prefix, 0) == 0) s += v;
    return s;
  }
};

parsed_page parse_page(const std::string& page) {
  parsed_page r;
  if (::access(python, X_OK) != 0) {
    r.error = "no /usr/bin/python3";
    return r;
  }
  char dir[] = "/tmp/ringio-ops-XXXXXX";
  if (::mkdtemp(dir) == nullptr) return r;
  std::string script = std::string(dir) + "/parse.py", file = std::string(dir) + "/page.txt";
  std::ofstream(script) << parser_script;
  std::ofstream(file) << page;
  confined_process p({python, script, file}, [] { return true; });
  auto st = p.wait(30s);
  std::remove(script.c_str());
  std::remove(file.c_str());
  ::rmdir(dir);
  r.ok = st == std::optional<int>(0);
  r.error = p.stderr_text();
  std::istringstream lines(p.stdout_text());
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("family ", 0) == 0) {
      std::istringstream f(line.substr(7));
      std::string name, type, help;
      f >> name >> type;
      std::getline(f, help);
      r.family_type[name] = type;
      r.family_help[name] = help.empty() ? help : help.substr(1);
      continue;
    }
    auto sp = line.rfind(' ');
    if (sp == std::string::npos) continue;
    r.samples[line.substr(0, sp)] = std::stod(line.substr(sp + 1));
  }
  return r;
}

bool have_prometheus_parser() {
  if (::access(python, X_OK) != 0) return false;
  confined_process p({python, "-c", "import prometheus_client.parser"}, [] { return true; });
  return p.wait(30s) == std::optional<int>(0);
}

#define REQUIRE_PARSER()                                      \
  if (!have_prometheus_parser())                              \
  GTEST_SKIP() << "/usr/bin/python3 lacks prometheus_client " \
                  "(python3-prometheus-client)"

// The port after "127.0.0.1:" in the next stdout line of `p` (0: none within 10 s).
std::uint16_t port_in_next_line(confined_process& p) {
  auto line = p.read_line(10s);
  if (!line) return 0;
  auto pos = line->find("127.0.0.1:");
  return pos == std::string::npos ? 0 : static_cast<std::uint16_t>(std::atoi(line->c_str() + pos + 10));
}

// An app (http_server or echo_server) with --port 0 --metrics-port 0.
struct app_with_metrics {
  confined_process process;
  std::uint16_t port = 0, metrics_port = 0;
  app_with_metrics(const char* path, std::vector<std::string> extra)
      : process(
            [&] {
              std::vector<std::string> a{path, "--port", "0", "--metrics-port", "0"};
              a.insert(a.end(), extra.begin(), extra.end());
              return a;
            }(),
            [] { return true; }) {
    port = port_in_next_line(process);
    metrics_port = port_in_next_line(process);
  }
  // SIGTERM, and the exit status (nullopt: still running after `limit`).
  std::optional<int> terminate(std::chrono::milliseconds limit = 15s) {
    process.signal(SIGTERM);
    return process.wait(limit);
  }
};

// ---------------------------------------------------------------------------------
// ringio-doctor

// UBSan's vptr check opens a pipe to probe whether a vtable is readable; with no two
// descriptors free it reports "invalid vptr" for every virtual call, however sound (a
// ten-line program with one virtual call shows it), and ASan aborts reading /proc files.
constexpr const char* sanitizer_needs_descriptors =
    "the sanitizer runtime needs descriptors of its own (UBSan's vptr check opens a pipe) and reports a false "
    "'invalid vptr' when none is left; the release build (and valgrind) cover this";

auto denying(long nr, int err) {
  return [f = syscall_filter({nr}, err)] { return f.install(); };
}

const json_value* find_by_name(const json_value& list, const std::string& name) {
  for (const json_value& e : list.items)
    if (text_at(e, "name") == name) return &e;
  return nullptr;
}

// Another errno than EPERM/ENOSYS from io_uring_setup (a security module's EACCES):
// blocker `other`, the failing call and its error, and the fall-back to epoll.
TEST(OpsDoctorAttack, SetupDeniedWithEaccesIsOtherAndNamesTheError) {
  if (!uring_usable_here()) GTEST_SKIP() << "io_uring is unavailable on this host already";
  auto r = run_doctor({"--json"}, denying(__NR_io_uring_setup, EACCES));
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  json_value v = json_of(r);
  const json_value* b = v.get("blocker");
  ASSERT_TRUE(b != nullptr && b->kind == json_value::type::object) << r.out;
  EXPECT_EQ(text_at(*b, "kind"), "other") << r.out;
  EXPECT_NE(text_at(*b, "error").find("io_uring_setup: Permission denied"), std::string::npos) << r.out;
  EXPECT_EQ(text_at(*b, "cause").find("EPERM"), std::string::npos) << "the call failed with EACCES, not EPERM";
  EXPECT_FALSE(text_at(*b, "fix").empty());
  EXPECT_EQ(text_at(v, "backend"), "epoll") << r.out;
  EXPECT_FALSE(v.get("uring_usable")->flag);
}

// io_uring_enter denied (setup and register allowed): whatever the doctor says must be
// what a server does under the same filter. If it says io_uring is usable, echo_server
// under that filter must start on uring and echo; if not, echo_server must be on epoll.
TEST(OpsDoctorAttack, EnterDeniedVerdictMatchesWhatEchoServerDoes) {
  if (!uring_usable_here()) GTEST_SKIP() << "io_uring is unavailable on this host already";
  auto r = run_doctor({"--json"}, denying(__NR_io_uring_enter, EPERM));
  json_value v = json_of(r);
  ASSERT_NE(v.get("uring_usable"), nullptr) << r.out << r.err;
  const bool usable = v.get("uring_usable")->flag;
  confined_process echo({ECHO_SERVER_PATH, "--port", "0"}, denying(__NR_io_uring_enter, EPERM));
  auto line = echo.read_line(10s);
  if (!line) {
    auto st = echo.wait(10s);
    FAIL() << "doctor: exit " << r.status << ", uring_usable " << usable << ", backend " << text_at(v, "backend")
           << "; echo_server under the same filter exits " << st.value_or(-1) << ":\n"
           << echo.stderr_text();
  }
  bool echoed = false;
  if (auto pos = line->find("127.0.0.1:"); pos != std::string::npos) {
    int fd = connect_loopback(static_cast<std::uint16_t>(std::atoi(line->c_str() + pos + 10)));
    timeval tv{3, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char buf[5] = {};
    echoed = fd >= 0 && send_text(fd, "hello") && ::recv(fd, buf, 5, MSG_WAITALL) == 5;
    if (fd >= 0) ::close(fd);
  }
  echo.signal(SIGKILL);
  (void)echo.wait(10s);
  const bool on_uring = line->find("backend uring ") != std::string::npos;
  EXPECT_EQ(usable, on_uring) << "doctor: " << text_at(v, "backend") << " usable=" << usable << "\nserver: " << *line;
  EXPECT_TRUE(echoed) << "echo_server under the filter does not echo; doctor said usable=" << usable
                      << " backend=" << text_at(v, "backend") << "\nserver: " << *line << "\n"
                      << echo.stderr_text();
  EXPECT_EQ(r.status, usable ? 0 : 1);
}

// Every documented key, with its documented type, and the documented features and limits.
TEST(OpsDoctorAttack, JsonHasEveryDocumentedKeyFeatureAndLimit) {
  auto r = run_doctor({"--json"});
  json_value v = json_of(r);
  ASSERT_EQ(v.kind, json_value::type::object);
  using t = json_value::type;
  auto kind_of = [&](const json_value& o, const char* k) { return o.get(k) == nullptr ? t::null : o.get(k)->kind; };
  EXPECT_EQ(kind_of(v, "kernel"), t::string);
  EXPECT_EQ(kind_of(v, "uring_usable"), t::boolean);
  ASSERT_NE(v.get("blocker"), nullptr);
  ASSERT_NE(v.get("backend"), nullptr);
  EXPECT_EQ(kind_of(v, "backend_reason"), t::string);
  ASSERT_EQ(kind_of(v, "features"), t::array);
  ASSERT_EQ(kind_of(v, "limits"), t::array);
  for (const json_value& f : v.get("features")->items) {
    EXPECT_EQ(kind_of(f, "name"), t::string);
    EXPECT_EQ(kind_of(f, "available"), t::boolean);
    EXPECT_EQ(kind_of(f, "used_by_ringio"), t::boolean) << text_at(f, "name");
    EXPECT_EQ(kind_of(f, "reason"), t::string);
    if (f.get("available") != nullptr && !f.get("available")->flag) {
      EXPECT_NE(text_at(f, "reason").find("Linux "), std::string::npos) << "a 'no' names the release: " << f.text;
    }
  }
  for (const json_value& l : v.get("limits")->items) {
    EXPECT_EQ(kind_of(l, "name"), t::string);
    EXPECT_EQ(kind_of(l, "value"), t::string);
    EXPECT_EQ(kind_of(l, "warning"), t::string) << text_at(l, "name");
  }
  if (r.status == 0) {
    for (const char* f : {"SINGLE_ISSUER", "DEFER_TASKRUN", "COOP_TASKRUN", "SUBMIT_ALL", "NO_SQARRAY", "MSG_RING",
                          "FIXED_FD_INSTALL", "IORING_OP_READ", "IORING_OP_WRITE", "IORING_OP_OPENAT",
                          "IORING_OP_STATX", "IORING_OP_FSYNC", "IORING_OP_FALLOCATE", "IORING_OP_FTRUNCATE",
                          "IORING_OP_SPLICE", "IORING_OP_WAITID", "IORING_OP_FUTEX_WAIT", "IORING_OP_FUTEX_WAKE"})
      EXPECT_NE(find_by_name(*v.get("features"), f), nullptr) << f << " missing";
  }
  for (const char* l : {"RLIMIT_NOFILE", "RLIMIT_MEMLOCK", "kernel.io_uring_disabled", "kernel.io_uring_group",
                        "net.core.somaxconn", "net.ipv4.tcp_mem", "net.ipv4.ip_local_port_range"})
    EXPECT_NE(find_by_name(*v.get("limits"), l), nullptr) << l << " missing";
}

// The text and the JSON report the same host: kernel, backend, every feature with the
// same yes/no, every limit with its value and warning.
TEST(OpsDoctorAttack, TextAndJsonTellTheSameStory) {
  auto j = run_doctor({"--json"});
  auto h = run_doctor({});
  EXPECT_EQ(j.status, h.status);
  json_value v = json_of(j);
  ASSERT_NE(v.get("features"), nullptr);
  EXPECT_NE(h.out.find(text_at(v, "kernel")), std::string::npos);
  if (v.get("backend")->kind == json_value::type::string) {
    EXPECT_NE(h.out.find("backend: " + text_at(v, "backend")), std::string::npos) << h.out;
  }
  for (const json_value& f : v.get("features")->items) {
    std::string yes = (f.get("available")->flag ? "yes " : "no ") + text_at(f, "name");
    EXPECT_NE(h.out.find(yes), std::string::npos) << "'" << yes << "' not in the text";
    EXPECT_NE(h.out.find(text_at(f, "reason")), std::string::npos) << text_at(f, "name");
  }
  for (const json_value& l : v.get("limits")->items) {
    EXPECT_NE(h.out.find(text_at(l, "name")), std::string::npos) << text_at(l, "name");
    // The two runs read the host twice: a live reading (the pages TCP uses now) may
    // differ between them, so only the part before it is compared.
    std::string value = text_at(l, "value");
    if (auto live = value.find("; in use"); live != std::string::npos) value.resize(live);
    EXPECT_NE(h.out.find(value), std::string::npos) << text_at(l, "name") << ": " << text_at(l, "value");
    if (!text_at(l, "warning").empty()) {
      EXPECT_NE(h.out.find(text_at(l, "warning")), std::string::npos) << text_at(l, "name");
    }
  }
}

// A hostile RINGIO_BACKEND (quotes, backslash, newline, control byte) still gives one
// valid JSON object (read by Python's strict reader too); io_uring itself is still
// usable (exit 0) and the backend is null (an io_context would fail to start).
TEST(OpsDoctorAttack, HostileRingioBackendKeepsJsonValid) {
  if (!uring_usable_here()) GTEST_SKIP() << "io_uring is unavailable on this host already";
  auto setup = [] { return ::setenv("RINGIO_BACKEND", "ep\"oll\\\n\t\x01\x7f", 1) == 0; };
  auto r = run_doctor({"--json"}, setup);
  json_value v = json_of(r);
  EXPECT_EQ(r.status, 0) << "exit status is about io_uring, not the variable: " << r.out;
  ASSERT_NE(v.get("backend"), nullptr);
  EXPECT_EQ(v.get("backend")->kind, json_value::type::null) << r.out;
  EXPECT_NE(text_at(v, "backend_reason").find("RINGIO_BACKEND"), std::string::npos) << r.out;
  confined_process py({python, "-c", "import json,sys; json.loads(sys.argv[1], strict=True)", r.out},
                      [] { return true; });
  EXPECT_EQ(py.wait(20s), std::optional<int>(0)) << py.stderr_text();
}

// RINGIO_BACKEND=epoll: the backend is epoll "because of the variable", and io_uring
// (the preferred backend) is still usable: exit 0.
TEST(OpsDoctorAttack, ForcedEpollStillReportsUringUsable) {
  if (!uring_usable_here()) GTEST_SKIP() << "io_uring is unavailable on this host already";
  auto r = run_doctor({"--json"}, [] { return ::setenv("RINGIO_BACKEND", "epoll", 1) == 0; });
  json_value v = json_of(r);
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(v.get("uring_usable")->flag);
  EXPECT_EQ(text_at(v, "backend"), "epoll");
  EXPECT_NE(text_at(v, "backend_reason").find("RINGIO_BACKEND"), std::string::npos) << r.out;
}

// RINGIO_BACKEND=uring under a filter denying io_uring_setup: an io_context fails to
// start, so the backend is null; the blocker is seccomp; exit 1.
TEST(OpsDoctorAttack, ForcedUringUnderSeccompHasNoBackend) {
  if (!uring_usable_here()) GTEST_SKIP() << "io_uring is unavailable on this host already";
  auto deny = denying(__NR_io_uring_setup, EPERM);
  auto r = run_doctor({"--json"}, [&deny] { return ::setenv("RINGIO_BACKEND", "uring", 1) == 0 && deny(); });
  json_value v = json_of(r);
  EXPECT_EQ(r.status, 1) << r.out;
  ASSERT_NE(v.get("backend"), nullptr);
  EXPECT_EQ(v.get("backend")->kind, json_value::type::null) << r.out;
  ASSERT_NE(v.get("blocker"), nullptr);
  EXPECT_EQ(text_at(*v.get("blocker"), "kind"), "seccomp") << r.out;
}

TEST(OpsDoctorAttack, BadArgumentsPrintUsageAndExitTwo) {
  for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
           {"--json", "extra"}, {"--JSON"}, {""}, {"--json=1"}, {"-"}, {"-j"}, {"json"}}) {
    auto r = run_doctor(args);
    std::string shown;
    for (auto& a : args) shown += "'" + a + "' ";
    EXPECT_EQ(r.status, 2) << shown;
    EXPECT_NE(r.err.find("usage: ringio-doctor"), std::string::npos) << shown << r.err;
    EXPECT_TRUE(r.out.empty()) << shown << r.out;
  }
}

// RLIMIT_NOFILE: a soft limit under the hard one warns (the soft one bites); at or
// above 65,536 no warning (when the hard limit allows setting it).
TEST(OpsDoctorAttack, OpenFileWarningFollowsTheSoftLimit) {
  rlimit now{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &now), 0);
  const rlim_t hard = now.rlim_max;
  auto with_nofile = [](rlim_t soft, rlim_t hard) {
    return [soft, hard] {
      rlimit l{soft, hard};
      return ::setrlimit(RLIMIT_NOFILE, &l) == 0;
    };
  };
  {
    auto r = run_doctor({"--json"}, with_nofile(1000, hard));
    json_value v = json_of(r);
    const json_value* l = find_by_name(*v.get("limits"), "RLIMIT_NOFILE");
    ASSERT_NE(l, nullptr) << r.out;
    EXPECT_EQ(text_at(*l, "value"), "soft 1000, hard " + std::to_string(hard));
    EXPECT_NE(text_at(*l, "warning").find("EMFILE"), std::string::npos) << text_at(*l, "warning");
  }
  if (hard >= 65536 && hard != RLIM_INFINITY) {
    auto r = run_doctor({"--json"}, with_nofile(65536, hard));
    json_value v = json_of(r);
    const json_value* l = find_by_name(*v.get("limits"), "RLIMIT_NOFILE");
    ASSERT_NE(l, nullptr);
    EXPECT_EQ(text_at(*l, "warning"), "") << text_at(*l, "value");
  }
}

// Almost no descriptors left: the doctor still prints one valid report whose verdict,
// blocker and exit status agree with each other (no crash, no half object).
TEST(OpsDoctorAttack, TinyOpenFileLimitsGiveAConsistentReport) {
  if (ringio_test::under_sanitizer) GTEST_SKIP() << sanitizer_needs_descriptors;
  for (rlim_t n : {4, 5, 6, 8}) {
    auto r = run_doctor({"--json"}, [n] {
      rlimit l{n, n};
      return ::setrlimit(RLIMIT_NOFILE, &l) == 0;
    });
    ASSERT_TRUE(r.status == 0 || r.status == 1) << "nofile " << n << ": " << r.status << r.err;
    json_value v = json_of(r);
    ASSERT_NE(v.get("uring_usable"), nullptr) << r.out;
    EXPECT_EQ(v.get("uring_usable")->flag, r.status == 0) << n;
    EXPECT_EQ(v.get("blocker")->kind == json_value::type::object, r.status == 1) << n << r.out;
    EXPECT_EQ(v.get("features")->items.empty(), r.status == 1) << n;
  }
}

// No locked memory at all: kernels from 5.12 do not charge rings to RLIMIT_MEMLOCK, so
// io_uring is usable and the limit carries no warning there.
TEST(OpsDoctorAttack, ZeroMemlockOnAModernKernelIsNoBlocker) {
  if (!uring_usable_here()) GTEST_SKIP() << "io_uring is unavailable on this host already";
  auto r = run_doctor({"--json"}, [] {
    rlimit l{0, 0};
    return ::setrlimit(RLIMIT_MEMLOCK, &l) == 0;
  });
  json_value v = json_of(r);
  EXPECT_EQ(r.status, 0) << r.out;
  const json_value* l = find_by_name(*v.get("limits"), "RLIMIT_MEMLOCK");
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(text_at(*l, "warning"), "") << text_at(*l, "value");
}

// As an unprivileged user (nobody), with kernel.io_uring_disabled 0: usable, exit 0.
TEST(OpsDoctorAttack, UnprivilegedUserGetsTheSameVerdict) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to switch to an unprivileged user";
  if (!uring_usable_here()) GTEST_SKIP() << "io_uring is unavailable on this host already";
  std::ifstream disabled("/proc/sys/kernel/io_uring_disabled");
  int d = 0;
  disabled >> d;
  if (d != 0) GTEST_SKIP() << "kernel.io_uring_disabled is " << d;
  auto r = run_doctor({"--json"}, [] {
    gid_t none[1] = {65534};
    return ::setgroups(1, none) == 0 && ::setresgid(65534, 65534, 65534) == 0 && ::setresuid(65534, 65534, 65534) == 0;
  });
  json_value v = json_of(r);
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(text_at(v, "backend"), "uring");
}

// The library call in a process with a filter installed on its main thread before any
// ring exists: the same seccomp verdict as the CLI.
TEST(OpsDoctorAttack, LibraryCallUnderSeccompInAForkedChild) {
  if (!uring_usable_here()) GTEST_SKIP() << "io_uring is unavailable on this host already";
  syscall_filter f({__NR_io_uring_setup}, ENOSYS);
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipefd[0]);
    if (!f.install()) ::_exit(3);
    ringio::doctor::report rep = ringio::doctor::diagnose();
    std::string out = std::string(rep.blocker ? rep.blocker->kind : "none") + "|" + (rep.uring_usable ? "1" : "0") +
                      "|" + (rep.backend ? std::string(ringio::to_string(*rep.backend)) : "null");
    (void)!::write(pipefd[1], out.data(), out.size());
    ::_exit(0);
  }
  ::close(pipefd[1]);
  std::string got;
  char buf[256];
  ssize_t n;
  while ((n = ::read(pipefd[0], buf, sizeof buf)) > 0) got.append(buf, static_cast<std::size_t>(n));
  ::close(pipefd[0]);
  int st = 0;
  ::waitpid(pid, &st, 0);
  EXPECT_EQ(got, "seccomp|0|epoll");
}

// An io_context that cannot get all its descriptors (RLIMIT_NOFILE just above what is
// open) throws std::system_error or starts; it does not touch a half-built backend.
// Each limit in a child with only stdin, stdout and stderr open: under UBSan a bad
// member call aborts the child.
TEST(OpsDoctorAttack, IoContextUnderTinyOpenFileLimitFailsCleanly) {
  if (ringio_test::under_sanitizer) GTEST_SKIP() << sanitizer_needs_descriptors;
  for (rlim_t n : {4, 5, 6, 7, 8}) {
    pid_t pid = ::fork();
    if (pid == 0) {
      for (int fd = 3; fd < 1024; ++fd) ::close(fd);
      rlimit l{n, n};
      if (::setrlimit(RLIMIT_NOFILE, &l) != 0) ::_exit(3);
      try {
        ringio::io_context ctx(ringio::io_context_options{.quiet = true});
      } catch (const std::system_error&) {
      }
      ::_exit(0);
    }
    int st = -1;
    ::waitpid(pid, &st, 0);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "RLIMIT_NOFILE " << n << ": child status " << st;
  }
}

// ---------------------------------------------------------------------------------
// Loop metrics for a known workload, on every backend.

class OpsLoopMetricsAttack : public backend_test {};

ringio::task<void> known_workload(socket_pair& p, int sends, int sleeps, std::uint64_t& recvs) {
  std::array<char, 7> out{'a', 'b', 'c', 'd', 'e', 'f', 'g'};
  std::array<char, 64> in{};
  for (int i = 0; i < sends; ++i) {
    auto n = co_await p.a.send(ringio::const_buffer(out.data(), out.size()));
    EXPECT_TRUE(n && *n == out.size());
  }
  std::size_t got = 0;
  while (got < static_cast<std::size_t>(sends) * out.size()) {
    auto n = co_await p.b.recv(ringio::mutable_buffer(in.data(), in.size()));
    ++recvs;
    if (!n || *n == 0) break;
    got += *n;
  }
  EXPECT_EQ(got, static_cast<std::size_t>(sends) * out.size());
  for (int i = 0; i < sleeps; ++i) (void)co_await ringio::sleep_for(1ms);
}

// N sends, R receives, K sleeps: exactly N + R io operations and K timer operations
// started and completed, none cancelled or failed, 7N bytes each way.
TEST_P(OpsLoopMetricsAttack, ExactCountsForAKnownWorkload) {
  socket_pair p;
  const ringio::loop_metrics before = ctx().metrics();
  std::uint64_t recvs = 0;
  run(known_workload(p, 10, 5, recvs));
  const ringio::loop_metrics m = ctx().metrics();
  EXPECT_EQ(m.ops_started[io] - before.ops_started[io], 10 + recvs);
  EXPECT_EQ(m.ops_completed[io] - before.ops_completed[io], 10 + recvs);
  EXPECT_EQ(m.ops_cancelled[io] - before.ops_cancelled[io], 0u);
  EXPECT_EQ(m.ops_failed[io] - before.ops_failed[io], 0u);
  EXPECT_EQ(m.ops_started[timer] - before.ops_started[timer], 5u);
  EXPECT_EQ(m.ops_completed[timer] - before.ops_completed[timer], 5u);
  EXPECT_EQ(m.ops_cancelled[timer] - before.ops_cancelled[timer], 0u);
  EXPECT_EQ(m.bytes_out - before.bytes_out, 70u);
  EXPECT_EQ(m.bytes_in - before.bytes_in, 70u);
  EXPECT_EQ(m.tasks_alive, 0u);
}

ringio::task<void> stopped_recv(socket_pair& p, std::stop_token t) {
  std::array<char, 8> in{};
  auto r = co_await p.b.recv(ringio::mutable_buffer(in.data(), in.size())).with_stop(std::move(t));
  EXPECT_FALSE(r);
}
ringio::task<void> stop_after(std::stop_source& s) {
  (void)co_await ringio::sleep_for(5ms);
  s.request_stop();
}
ringio::task<void> one_cancel(socket_pair& p) {
  std::stop_source s;
  co_await ringio::when_all(stopped_recv(p, s.get_token()), stop_after(s));
}

// One receive stopped: one io operation started, completed and cancelled (once), none
// failed; the timer that fired is neither.
TEST_P(OpsLoopMetricsAttack, OneStopIsOneCancellation) {
  socket_pair p;
  const ringio::loop_metrics before = ctx().metrics();
  run(one_cancel(p));
  const ringio::loop_metrics m = ctx().metrics();
  EXPECT_EQ(m.ops_started[io] - before.ops_started[io], 1u);
  EXPECT_EQ(m.ops_completed[io] - before.ops_completed[io], 1u);
  EXPECT_EQ(m.ops_cancelled[io] - before.ops_cancelled[io], 1u);
  EXPECT_EQ(m.ops_failed[io] - before.ops_failed[io], 0u);
  EXPECT_EQ(m.ops_cancelled[timer] - before.ops_cancelled[timer], 0u);
  EXPECT_EQ(m.ops_failed[timer] - before.ops_failed[timer], 0u);
}

ringio::task<void> timed_out_recv(socket_pair& p) {
  std::array<char, 8> in{};
  auto r = co_await ringio::with_timeout(p.b.recv(ringio::mutable_buffer(in.data(), in.size())), 10ms);
  EXPECT_FALSE(r);
}

// A receive whose with_timeout deadline passes: one failed io operation (timed_out), not
// also a cancelled one.
TEST_P(OpsLoopMetricsAttack, TimeoutIsOneFailureNotAlsoACancellation) {
  socket_pair p;
  const ringio::loop_metrics before = ctx().metrics();
  run(timed_out_recv(p));
  const ringio::loop_metrics m = ctx().metrics();
  EXPECT_EQ(m.ops_started[io] - before.ops_started[io], 1u);
  EXPECT_EQ(m.ops_completed[io] - before.ops_completed[io], 1u);
  EXPECT_EQ(m.ops_failed[io] - before.ops_failed[io], 1u);
  EXPECT_EQ(m.ops_cancelled[io] - before.ops_cancelled[io], 0u) << "the deadline is counted twice";
}

ringio::task<void> recv_in_time(socket_pair& p) {
  std::array<char, 8> in{};
  (void)co_await p.a.send(ringio::const_buffer("x", 1));
  auto r = co_await ringio::with_timeout(p.b.recv(ringio::mutable_buffer(in.data(), in.size())), 5s);
  EXPECT_TRUE(r);
}

// A receive that completes before its with_timeout deadline: nothing failed, nothing
// was cancelled by anyone (the deadline's timer is the runtime's own business).
TEST_P(OpsLoopMetricsAttack, DeadlineNotReachedIsNoCancellation) {
  socket_pair p;
  const ringio::loop_metrics before = ctx().metrics();
  run(recv_in_time(p));
  const ringio::loop_metrics m = ctx().metrics();
  EXPECT_EQ(m.ops_failed[io] - before.ops_failed[io], 0u);
  EXPECT_EQ(m.ops_cancelled[io] - before.ops_cancelled[io], 0u);
  std::printf("with_timeout won by the receive: timer started %llu, cancelled %llu\n",
              static_cast<unsigned long long>(m.ops_started[timer] - before.ops_started[timer]),
              static_cast<unsigned long long>(m.ops_cancelled[timer] - before.ops_cancelled[timer]));
}

// The runtime's sum is the sum of its loops (quiet loops: nothing moves between reads).
TEST(OpsRuntimeMetricsAttack, RuntimeSumEqualsItsLoops) {
  ringio::runtime rt({.threads = 3, .context = {.quiet = true}});
  rt.run_on_each([](ringio::io_context&, unsigned i) -> ringio::task<void> {
    for (unsigned k = 0; k <= i; ++k) (void)co_await ringio::sleep_for(1ms);
  });
  std::this_thread::sleep_for(50ms);
  ringio::loop_metrics sum;
  for (unsigned i = 0; i < rt.size(); ++i) sum += rt.context(i).metrics();
  const ringio::loop_metrics whole = rt.metrics();
  for (std::size_t k = 0; k < ringio::loop_metrics::kinds; ++k) {
    EXPECT_EQ(whole.ops_started[k], sum.ops_started[k]) << k;
    EXPECT_EQ(whole.ops_completed[k], sum.ops_completed[k]) << k;
  }
  EXPECT_GE(whole.ops_completed[timer], 6u);
  EXPECT_EQ(whole.tasks_alive, sum.tasks_alive);
  rt.stop();
}

ringio::task<void> sleeper() { (void)co_await ringio::sleep_for(20ms); }
ringio::task<void> spawn_and_look(ringio::io_context& ctx, std::uint64_t& seen) {
  for (int i = 0; i < 5; ++i) ctx.spawn(sleeper());
  seen = ctx.metrics().tasks_alive;
  (void)co_await ringio::sleep_for(100ms);
}

// Five spawned tasks are alive while they sleep and gone once they finished.
TEST_P(OpsLoopMetricsAttack, TasksAliveComesBackToZero) {
  std::uint64_t seen = 0;
  run(spawn_and_look(ctx(), seen));
  EXPECT_EQ(seen, 5u);
  EXPECT_EQ(ctx().metrics().tasks_alive, 0u);
}

// The fibers wait until the look is taken (an event, not a longer sleep: on a loaded
// machine one wake-up may come late enough to see both fibers gone).
ringio::task<void> fibers_and_look(std::uint64_t& during) {
  ringio::event looked;
  auto f1 = ringio::fiber([&looked] { (void)ringio::this_fiber::await(looked.wait()); });
  auto f2 = ringio::fiber([&looked] { (void)ringio::this_fiber::await(looked.wait()); });
  auto look = [](std::uint64_t& during, ringio::event& looked) -> ringio::task<void> {
    (void)co_await ringio::sleep_for(2ms);
    during = ringio::io_context::current()->metrics().fibers_alive;
    looked.set();
  };
  auto l = look(during, looked);
  co_await ringio::when_all(std::move(f1), std::move(f2), std::move(l));
}

TEST_P(OpsLoopMetricsAttack, FibersAliveComesBackToZero) {
  std::uint64_t during = 0;
  run(fibers_and_look(during));
  EXPECT_EQ(during, 2u);
  EXPECT_EQ(ctx().metrics().fibers_alive, 0u);
}

ringio::task<void> busy_spin() {
  (void)co_await ringio::sleep_for(1ms);
  auto end = std::chrono::steady_clock::now() + 30ms;
  while (std::chrono::steady_clock::now() < end) {
  }
  (void)co_await ringio::sleep_for(1ms);
}

// A task that holds the loop 30 ms is one stall of at least 30 ms: a count in a bucket
// whose bound is at least 0.025 s (or +Inf) and a sum of at least 30 ms.
TEST_P(OpsLoopMetricsAttack, StallHistogramSeesABusyLoop) {
  if (GetParam() == ringio::backend_kind::sim) GTEST_SKIP() << "simulated time";
  const ringio::loop_metrics before = ctx().metrics();
  run(busy_spin());
  const ringio::loop_metrics m = ctx().metrics();
  std::uint64_t long_ones = 0;
  for (std::size_t b = 0; b < ringio::loop_metrics::stall_buckets; ++b)
    if (b >= ringio::loop_metrics::stall_bounds.size() || ringio::loop_metrics::stall_bounds[b] >= 0.025)
      long_ones += m.stall_buckets_count[b] - before.stall_buckets_count[b];
  EXPECT_GE(long_ones, 1u);
  EXPECT_GE(m.stall_sum_ns - before.stall_sum_ns, 30'000'000u);
  EXPECT_LE(m.stall_count() - before.stall_count(), m.iterations - before.iterations + 1);
}

RINGIO_ALL_BACKENDS(OpsLoopMetricsAttack);

// The same on a runtime's loop (run() rather than sync_wait).
TEST(OpsRuntimeMetricsAttack, StallHistogramSeesABusyLoopOnARuntime) {
  ringio::runtime rt({.threads = 1, .context = {.quiet = true}});
  const ringio::loop_metrics before = rt.context(0).metrics();
  rt.run_on_each([](ringio::io_context&, unsigned) -> ringio::task<void> { co_await busy_spin(); });
  const ringio::loop_metrics m = rt.context(0).metrics();
  std::uint64_t long_ones = 0;
  for (std::size_t b = 0; b < ringio::loop_metrics::stall_buckets; ++b)
    if (b >= ringio::loop_metrics::stall_bounds.size() || ringio::loop_metrics::stall_bounds[b] >= 0.025)
      long_ones += m.stall_buckets_count[b] - before.stall_buckets_count[b];
  EXPECT_GE(long_ones, 1u);
  EXPECT_GE(m.stall_sum_ns - before.stall_sum_ns, 30'000'000u);
  rt.stop();
}

// ---------------------------------------------------------------------------------
// Metrics across threads (run under TSan).

// posts from a foreign thread: exactly that many counted.
TEST(OpsRuntimeMetricsAttack, PostsFromAnotherThreadCountedExactly) {
  ringio::runtime rt({.threads = 1, .context = {.quiet = true}});
  std::this_thread::sleep_for(50ms);
  const std::uint64_t before = rt.context(0).metrics().posts_received;
  std::atomic<int> ran{0};
  for (int i = 0; i < 100; ++i) ringio::post(rt.context(0), [&] { ran.fetch_add(1); });
  for (auto deadline = std::chrono::steady_clock::now() + 10s;
       ran.load() < 100 && std::chrono::steady_clock::now() < deadline;)
    std::this_thread::sleep_for(1ms);
  ASSERT_EQ(ran.load(), 100);
  EXPECT_EQ(rt.context(0).metrics().posts_received - before, 100u);
  rt.stop();
}

ringio::task<void> echo_traffic(int rounds) {
  socket_pair p;
  std::array<char, 512> buf{};
  for (int i = 0; i < rounds; ++i) {
    (void)co_await p.a.send_all(ringio::const_buffer(buf.data(), buf.size()));
    (void)co_await p.b.recv_exact(ringio::mutable_buffer(buf.data(), buf.size()));
    if (i % 50 == 0) (void)co_await ringio::sleep_for(1ms);
  }
}

bool not_below(const ringio::loop_metrics& a, const ringio::loop_metrics& b, std::string& which) {
  for (std::size_t k = 0; k < ringio::loop_metrics::kinds; ++k) {
    if (a.ops_started[k] < b.ops_started[k]) which = "ops_started";
    if (a.ops_completed[k] < b.ops_completed[k]) which = "ops_completed";
    if (a.ops_cancelled[k] < b.ops_cancelled[k]) which = "ops_cancelled";
    if (a.ops_failed[k] < b.ops_failed[k]) which = "ops_failed";
  }
  for (std::size_t i = 0; i < ringio::loop_metrics::stall_buckets; ++i)
    if (a.stall_buckets_count[i] < b.stall_buckets_count[i]) which = "stall bucket";
  if (a.bytes_in < b.bytes_in) which = "bytes_in";
  if (a.bytes_out < b.bytes_out) which = "bytes_out";
  if (a.iterations < b.iterations) which = "iterations";
  if (a.kernel_waits < b.kernel_waits) which = "kernel_waits";
  if (a.asleep_ns < b.asleep_ns) which = "asleep_ns";
  if (a.stall_sum_ns < b.stall_sum_ns) which = "stall_sum_ns";
  if (a.posts_received < b.posts_received) which = "posts_received";
  if (a.wakeups < b.wakeups) which = "wakeups";
  return which.empty();
}

// Two readers sample the runtime and one loop continuously while both loops move
// bytes: no counter ever goes down; finally nothing is in flight and bytes balance.
TEST(OpsRuntimeMetricsAttack, CountersNeverDecreaseUnderCrossThreadReads) {
  ringio::runtime rt({.threads = 2, .context = {.quiet = true}});
  std::atomic<bool> done{false};
  std::string bad;
  std::mutex bad_mu;
  auto reader = [&](bool whole) {
    ringio::loop_metrics last = whole ? rt.metrics() : rt.context(1).metrics();
    while (!done.load()) {
      ringio::loop_metrics now = whole ? rt.metrics() : rt.context(1).metrics();
      std::string which;
      if (!not_below(now, last, which)) {
        std::lock_guard l(bad_mu);
        bad = which;
      }
      last = now;
    }
  };
  std::thread r1(reader, true), r2(reader, false);
  rt.run_on_each([](ringio::io_context&, unsigned) -> ringio::task<void> { co_await echo_traffic(2000); });
  done = true;
  r1.join();
  r2.join();
  EXPECT_EQ(bad, "") << "a counter went down";
  ringio::loop_metrics m = rt.metrics();
  EXPECT_EQ(m.bytes_in, m.bytes_out);
  EXPECT_EQ(m.bytes_in, 2u * 2000u * 512u);
  EXPECT_EQ(m.ops_started[io], m.ops_completed[io]);
  rt.stop();
}

// ---------------------------------------------------------------------------------
// The Prometheus pages.

TEST(OpsPrometheusAttack, LabelAndHelpEscapingRoundTrip) {
  REQUIRE_PARSER();
  ringio::prometheus_writer w;
  w.family("ops_escape_total", "counter", "help with a back\\slash and a\nnewline");
  const std::string tricky = "q\"uote back\\slash new\nline";
  std::array<ringio::metric_label, 2> labels{ringio::metric_label{"a", tricky}, ringio::metric_label{"b", ""}};
  w.sample("ops_escape_total", labels, std::uint64_t{7});
  auto p = parse_page(w.text());
  ASSERT_TRUE(p.ok) << p.error << "\n" << w.text();
  EXPECT_EQ(p.at(R"(ops_escape_total{a="q\"uote back\\slash new\nline",b=""})"), 7) << w.text();
  EXPECT_EQ(p.family_help["ops_escape"], R"("help with a back\\slash and a\nnewline")") << w.text();
}

TEST(OpsPrometheusAttack, FractionalValuesEdgeCases) {
  REQUIRE_PARSER();
  ringio::prometheus_writer w;
  w.family("ops_seconds", "gauge", "edge values");
  const std::array<double, 5> values{0.0, 1e-9, 1e300, 123456789.123456, 0.1};
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::string v = std::to_string(i);
    std::array<ringio::metric_label, 1> l{ringio::metric_label{"i", v}};
    w.sample("ops_seconds", l, values[i]);
  }
  auto p = parse_page(w.text());
  ASSERT_TRUE(p.ok) << p.error << "\n" << w.text();
  for (std::size_t i = 0; i < values.size(); ++i) {
    double got = p.at("ops_seconds{i=\"" + std::to_string(i) + "\"}");
    EXPECT_NEAR(got, values[i], std::abs(values[i]) * 1e-9) << i << "\n" << w.text();
  }
}

// A histogram written from per-bucket counts: cumulative, +Inf = count, sum in seconds.
TEST(OpsPrometheusAttack, HistogramIsCumulativeWithInfEqualToCount) {
  REQUIRE_PARSER();
  ringio::prometheus_writer w;
  w.family("ops_hist_seconds", "histogram", "h");
  const std::array<double, 3> bounds{0.001, 0.01, 0.1};
  const std::array<std::uint64_t, 4> counts{3, 0, 5, 2};
  std::array<ringio::metric_label, 1> l{ringio::metric_label{"loop", "0"}};
  w.histogram("ops_hist_seconds", l, bounds, counts, 1.5);
  auto p = parse_page(w.text());
  ASSERT_TRUE(p.ok) << p.error << "\n" << w.text();
  EXPECT_EQ(p.at(R"(ops_hist_seconds_bucket{le="0.001",loop="0"})"), 3) << w.text();
  EXPECT_EQ(p.at(R"(ops_hist_seconds_bucket{le="0.01",loop="0"})"), 3);
  EXPECT_EQ(p.at(R"(ops_hist_seconds_bucket{le="0.1",loop="0"})"), 8);
  EXPECT_EQ(p.at(R"(ops_hist_seconds_bucket{le="+Inf",loop="0"})"), 10);
  EXPECT_EQ(p.at(R"(ops_hist_seconds_count{loop="0"})"), 10);
  EXPECT_DOUBLE_EQ(p.at(R"(ops_hist_seconds_sum{loop="0"})"), 1.5);
}

ringio::loop_metrics fabricated_loop(std::uint64_t base) {
  ringio::loop_metrics m;
  for (std::size_t k = 0; k < ringio::loop_metrics::kinds; ++k) {
    m.ops_started[k] = base + 10 * k + 4;
    m.ops_completed[k] = base + 10 * k + 3;
    m.ops_cancelled[k] = base + 10 * k + 1;
    m.ops_failed[k] = base + 10 * k + 2;
  }
  m.bytes_in = base + 100;
  m.bytes_out = base + 200;
  m.iterations = base + 300;
  m.asleep_ns = 2'500'000'000;
  for (std::size_t b = 0; b < ringio::loop_metrics::stall_buckets; ++b) m.stall_buckets_count[b] = b + 1;
  m.stall_sum_ns = 1'250'000'000;
  m.tasks_alive = base + 7;
  m.fibers_alive = base + 8;
  return m;
}

// Every documented loop family, its type, and known values from two fabricated loops.
TEST(OpsPrometheusAttack, LoopPageHasEveryDocumentedFamilyAndExactValues) {
  REQUIRE_PARSER();
  const std::array<ringio::loop_metrics, 2> loops{fabricated_loop(1000), fabricated_loop(5000)};
  ringio::prometheus_writer w;
  ringio::write_loop_metrics(w, loops);
  auto p = parse_page(w.text());
  ASSERT_TRUE(p.ok) << p.error << "\n" << w.text();
  const std::map<std::string, std::string> documented{{"ringio_operations_started", "counter"},
                                                      {"ringio_operations_completed", "counter"},
                                                      {"ringio_operations_cancelled", "counter"},
                                                      {"ringio_operations_failed", "counter"},
                                                      {"ringio_loop_bytes_received", "counter"},
                                                      {"ringio_loop_bytes_sent", "counter"},
                                                      {"ringio_loop_cq_overflows", "counter"},
                                                      {"ringio_loop_no_buffers", "counter"},
                                                      {"ringio_loop_multishot_rearms", "counter"},
                                                      {"ringio_loop_backlog_waits", "counter"},
                                                      {"ringio_loop_missed_wakeup_sweeps", "counter"},
                                                      {"ringio_loop_posts_received", "counter"},
                                                      {"ringio_loop_wakeups", "counter"},
                                                      {"ringio_loop_iterations", "counter"},
                                                      {"ringio_loop_kernel_waits", "counter"},
                                                      {"ringio_loop_asleep_seconds", "counter"},
                                                      {"ringio_loop_run_seconds", "histogram"},
                                                      {"ringio_loop_tasks_alive", "gauge"},
                                                      {"ringio_loop_fibers_alive", "gauge"}};
  for (auto& [name, type] : documented) EXPECT_EQ(p.family_type[name], type) << name;
  EXPECT_EQ(p.at(R"(ringio_operations_started_total{kind="timer",loop="1"})"), 5014);
  EXPECT_EQ(p.at(R"(ringio_operations_cancelled_total{kind="event",loop="0"})"), 1031);
  EXPECT_EQ(p.at(R"(ringio_loop_bytes_sent_total{loop="1"})"), 5200);
  EXPECT_DOUBLE_EQ(p.at(R"(ringio_loop_asleep_seconds_total{loop="0"})"), 2.5);
  EXPECT_EQ(p.at(R"(ringio_loop_tasks_alive{loop="1"})"), 5007);
  EXPECT_EQ(p.at(R"(ringio_loop_run_seconds_count{loop="0"})"), 91);  // 1 + 2 + ... + 13
  EXPECT_DOUBLE_EQ(p.at(R"(ringio_loop_run_seconds_sum{loop="0"})"), 1.25);
  EXPECT_EQ(p.at(R"(ringio_loop_run_seconds_bucket{le="1e-05",loop="0"})"), 1) << w.text();
}

// An empty runtime (no loops) still gives a valid page.
TEST(OpsPrometheusAttack, NoLoopsIsStillAValidPage) {
  REQUIRE_PARSER();
  ringio::prometheus_writer w;
  ringio::write_loop_metrics(w, {});
  ringio::http::write_server_metrics(w, ringio::http::server_metrics{});
  auto p = parse_page(w.text());
  EXPECT_TRUE(p.ok) << p.error << "\n" << w.text();
}

TEST(OpsPrometheusAttack, ServerPageHasEveryDocumentedFamilyAndExactValues) {
  REQUIRE_PARSER();
  ringio::http::server_metrics m;
  m.responses_by_class = {1, 20, 3, 40, 5};
  m.connections_active = 9;
  m.connections_idle = 4;
  for (std::size_t b = 0; b < m.latency_buckets; ++b) m.latency_count[b] = 2;
  m.latency_sum_ns = 3'000'000'000;
  m.request_bytes = 1234;
  m.response_bytes = 5678;
  m.header_timeouts = 11;
  m.body_timeouts = 12;
  m.idle_timeouts = 13;
  m.send_timeouts = 14;
  ringio::prometheus_writer w;
  ringio::http::write_server_metrics(w, m);
  auto p = parse_page(w.text());
  ASSERT_TRUE(p.ok) << p.error << "\n" << w.text();
  EXPECT_EQ(p.family_type["ringio_http_responses"], "counter");
  EXPECT_EQ(p.family_type["ringio_http_connections_active"], "gauge");
  EXPECT_EQ(p.family_type["ringio_http_connections_idle"], "gauge");
  EXPECT_EQ(p.family_type["ringio_http_request_duration_seconds"], "histogram");
  EXPECT_EQ(p.family_type["ringio_http_request_bytes"], "counter");
  EXPECT_EQ(p.family_type["ringio_http_response_bytes"], "counter");
  EXPECT_EQ(p.family_type["ringio_http_timeouts"], "counter");
  const char* classes[] = {"1xx", "2xx", "3xx", "4xx", "5xx"};
  for (std::size_t c = 0; c < 5; ++c)
    EXPECT_EQ(p.at(std::string("ringio_http_responses_total{class=\"") + classes[c] + "\"}"),
              static_cast<double>(m.responses_by_class[c]))
        << classes[c];
  EXPECT_EQ(p.at(R"(ringio_http_timeouts_total{kind="header"})"), 11);
  EXPECT_EQ(p.at(R"(ringio_http_timeouts_total{kind="body"})"), 12);
  EXPECT_EQ(p.at(R"(ringio_http_timeouts_total{kind="idle"})"), 13);
  EXPECT_EQ(p.at(R"(ringio_http_timeouts_total{kind="send"})"), 14);
  EXPECT_EQ(p.at("ringio_http_request_duration_seconds_count{}"), 34);
  EXPECT_DOUBLE_EQ(p.at("ringio_http_request_duration_seconds_sum{}"), 3.0);
  EXPECT_EQ(p.at(R"(ringio_http_request_duration_seconds_bucket{le="10"})"), 32) << w.text();
  EXPECT_EQ(p.at("ringio_http_connections_idle{}"), 4);
}

// ---------------------------------------------------------------------------------
// An in-process http::server: exact counters for a known request mix.

// A server on a runtime of `threads` loops, serving on loop 0, with /metrics.
struct served_runtime {
  ringio::http::router routes;
  std::unique_ptr<ringio::http::server> srv;
  ringio::stream_listener listener;
  std::uint16_t port = 0;
  std::stop_source stop;
  std::optional<ringio::runtime> rt;

  explicit served_runtime(unsigned threads, ringio::http::server_options opts = {}) {
    routes.get("/", [](ringio::http::request&) -> ringio::task<ringio::http::response> {
      co_return ringio::http::response::borrowed(200, "hello");
    });
    routes.post("/upload", [](ringio::http::request&) -> ringio::task<ringio::http::response> {
      co_return ringio::http::response::borrowed(200, "taken");
    });
    routes.get("/moved", [](ringio::http::request&) -> ringio::task<ringio::http::response> {
      co_return ringio::http::response::borrowed(301, "");
    });
    routes.get("/throw", [](ringio::http::request&) -> ringio::task<ringio::http::response> {
      throw std::runtime_error("handler fails");
      co_return ringio::http::response::borrowed(200, "");
    });
    rt.emplace(ringio::runtime_options{.threads = threads, .context = {.quiet = true}});
    routes.get("/metrics", ringio::http::metrics_handler(*rt, nullptr));
    opts.log = [](std::string_view) {};
    srv = std::make_unique<ringio::http::server>(routes, std::move(opts));
    listener = listen_loopback();
    port = address_of(listener).port();
    std::atomic<bool> started{false};
    ringio::post(rt->context(0), [this, &started] {
      rt->context(0).spawn(serve_then_flag(*srv, listener, stop.get_token(), served));
      started = true;
    });
    while (!started.load()) std::this_thread::sleep_for(1ms);
  }
  // A graceful stop first: a loop destroyed under a running serve() does not end
  // (OpsHttpMetricsAttack.LoopShutdownWithAServeTaskEnds).
  ~served_runtime() { stop_all(); }
  void stop_all() {
    stop.request_stop();
    for (auto deadline = std::chrono::steady_clock::now() + 10s;
         !served.load() && std::chrono::steady_clock::now() < deadline;)
      std::this_thread::sleep_for(1ms);
    EXPECT_TRUE(served.load()) << "serve() did not end 10 s after its stop";
    rt->stop();
  }
  static ringio::task<void> serve_then_flag(ringio::http::server& srv, ringio::stream_listener& l, std::stop_token t,
                                            std::atomic<bool>& flag) {
    co_await srv.serve(l, std::move(t));
    flag = true;
  }
  std::atomic<bool> served{false};

  template <class Done>
  ringio::http::server_metrics wait_for(Done done) {
    ringio::http::server_metrics m = srv->metrics();
    for (auto deadline = std::chrono::steady_clock::now() + 10s;
         !done(m) && std::chrono::steady_clock::now() < deadline; m = srv->metrics())
      std::this_thread::sleep_for(5ms);
    return m;
  }
};

std::string exchange_raw(int fd, std::string_view request) {
  std::string all;
  if (!send_text(fd, request)) return all;
  char buf[8192];
  ssize_t n;
  while (all.find("\r\n\r\n") == std::string::npos && (n = ::recv(fd, buf, sizeof buf, 0)) > 0)
    all.append(buf, static_cast<std::size_t>(n));
  return all;
}

// 3×200, 1×301, 2×404, 1×500 (a throwing handler), 1×400 (garbage), 1×431 (a huge
// head): the classes exactly; every connection closed: no active or idle one.
TEST(OpsHttpMetricsAttack, ResponseClassesExactForAKnownMix) {
  served_runtime s(1, ringio::http::server_options{});
  for (const char* path : {"/", "/", "/", "/moved", "/none", "/nothing", "/throw"}) {
    auto a = http_get(s.port, path);
    ASSERT_TRUE(a.has_value()) << path;
  }
  {
    int fd = connect_loopback(s.port);
    EXPECT_NE(exchange_raw(fd, "GARBAGE\r\n\r\n").find(" 400 "), std::string::npos);
    ::close(fd);
  }
  {
    int fd = connect_loopback(s.port);
    std::string huge = "GET / HTTP/1.1\r\nHost: t\r\nX-Big: " + std::string(200 * 1024, 'a') + "\r\n\r\n";
    std::string reply = exchange_raw(fd, huge);
    EXPECT_NE(reply.find(" 431 "), std::string::npos) << reply.substr(0, 60);
    ::close(fd);
  }
  auto m = s.wait_for([](const auto& m) {
    return m.connections_active == 0 && m.responses_by_class[3] == 4 && m.responses_by_class[4] == 1;
  });
  EXPECT_EQ(m.responses_by_class[0], 0u);
  EXPECT_EQ(m.responses_by_class[1], 3u);
  EXPECT_EQ(m.responses_by_class[2], 1u);
  EXPECT_EQ(m.responses_by_class[3], 4u);  // 404, 404, 400, 431
  EXPECT_EQ(m.responses_by_class[4], 1u);
  EXPECT_EQ(m.connections_active, 0u);
  EXPECT_EQ(m.connections_idle, 0u);
}

void reset_close(int fd) {
  linger l{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  ::close(fd);
}

// Keep-alive connections reset by the client, idle or in the middle of a head: the
// gauges follow (3 active/3 idle, then back to 0 after the resets).
TEST(OpsHttpMetricsAttack, GaugesFollowResets) {
  served_runtime s(1, ringio::http::server_options{});
  std::vector<int> fds;
  for (int i = 0; i < 3; ++i) {
    int fd = connect_loopback(s.port);
    ASSERT_NE(exchange_raw(fd, "GET / HTTP/1.1\r\nHost: t\r\n\r\n").find(" 200 "), std::string::npos);
    fds.push_back(fd);
  }
  auto m = s.wait_for([](const auto& m) { return m.connections_idle == 3; });
  EXPECT_EQ(m.connections_active, 3u);
  EXPECT_EQ(m.connections_idle, 3u);
  reset_close(fds[0]);
  m = s.wait_for([](const auto& m) { return m.connections_active == 2; });
  EXPECT_EQ(m.connections_active, 2u);
  EXPECT_EQ(m.connections_idle, 2u);
  ASSERT_TRUE(send_text(fds[1], "GET / HTTP/1.1\r\nHo"));  // half a head, then a reset
  std::this_thread::sleep_for(50ms);
  m = s.srv->metrics();
  EXPECT_EQ(m.connections_active, 2u);
  EXPECT_EQ(m.connections_idle, 1u) << "a connection reading a head is not idle";
  reset_close(fds[1]);
  reset_close(fds[2]);
  m = s.wait_for([](const auto& m) { return m.connections_active == 0; });
  EXPECT_EQ(m.connections_active, 0u);
  EXPECT_EQ(m.connections_idle, 0u);
  EXPECT_EQ(m.responses_by_class[1], 3u);
}

// Header, body and idle timeouts, each counted once under its kind, with the 408s.
TEST(OpsHttpMetricsAttack, TimeoutsByKindExact) {
  ringio::http::server_options o;
  o.header_timeout = 300ms;
  o.idle_timeout = 300ms;
  o.body_timeout = 300ms;
  served_runtime s(1, o);
  int slow_head = connect_loopback(s.port);
  ASSERT_TRUE(send_text(slow_head, "GET / HTTP/1.1\r\n"));
  int slow_body = connect_loopback(s.port);
  ASSERT_TRUE(send_text(slow_body, "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n0123456789"));
  int idle1 = connect_loopback(s.port), idle2 = connect_loopback(s.port);
  ASSERT_NE(exchange_raw(idle1, "GET / HTTP/1.1\r\nHost: t\r\n\r\n").find(" 200 "), std::string::npos);
  ASSERT_NE(exchange_raw(idle2, "GET / HTTP/1.1\r\nHost: t\r\n\r\n").find(" 200 "), std::string::npos);
  auto m = s.wait_for([](const auto& m) { return m.connections_active == 0; });
  EXPECT_EQ(m.header_timeouts, 1u);
  EXPECT_EQ(m.body_timeouts, 1u);
  EXPECT_EQ(m.idle_timeouts, 2u);
  EXPECT_EQ(m.send_timeouts, 0u);
  EXPECT_EQ(m.responses_by_class[3], 2u);  // the two 408s
  EXPECT_EQ(m.responses_by_class[1], 2u);
  EXPECT_EQ(m.connections_active, 0u);
  EXPECT_EQ(m.connections_idle, 0u);
  for (int fd : {slow_head, slow_body, idle1, idle2}) ::close(fd);
}

// metrics_handler on a 3-loop runtime: the page parses and has loop="0".."2"; scrapers
// keep scraping while the server stops and the runtime's loops are destroyed (ASan,
// TSan): no crash, no race.
TEST(OpsHttpMetricsAttack, InProcessPageAndScrapesWhileTheRuntimeStops) {
  REQUIRE_PARSER();
  for (int round = 0; round < 3; ++round) {
    served_runtime s(3, ringio::http::server_options{});
    auto a = http_get(s.port, "/metrics");
    ASSERT_TRUE(a.has_value());
    ASSERT_EQ(a->status, 200);
    EXPECT_NE(a->head.find("text/plain; version=0.0.4"), std::string::npos) << a->head;
    if (round == 0) {
      auto p = parse_page(a->body);
      ASSERT_TRUE(p.ok) << p.error;
      for (const char* l : {"0", "1", "2"})
        EXPECT_GE(p.at(std::string("ringio_loop_iterations_total{loop=\"") + l + "\"}"), 0) << l;
    }
    std::atomic<bool> done{false};
    std::vector<std::thread> scrapers;
    for (int i = 0; i < 4; ++i)
      scrapers.emplace_back([&] {
        while (!done.load()) (void)http_get(s.port, "/metrics");
      });
    std::this_thread::sleep_for(50ms);
    s.stop_all();
    done = true;
    for (auto& t : scrapers) t.join();
  }
}

// The errors the server answers itself: 413 (a body over max_body_bytes) and 503 (over
// max_connections), counted under their classes; the refused connection never counts
// as active, and everything returns to 0.
TEST(OpsHttpMetricsAttack, ServerAnsweredErrorsCounted) {
  ringio::http::server_options o;
  o.max_body_bytes = 10;
  o.max_connections = 1;
  served_runtime s(1, o);
  int holder = connect_loopback(s.port);
  ASSERT_NE(exchange_raw(holder, "GET / HTTP/1.1\r\nHost: t\r\n\r\n").find(" 200 "), std::string::npos);
  auto refused = http_get(s.port, "/");
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->status, 503);
  auto m = s.srv->metrics();
  EXPECT_EQ(m.connections_active, 1u);
  std::string big = exchange_raw(holder, "POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n");
  EXPECT_NE(big.find(" 413 "), std::string::npos) << big;
  ::close(holder);
  m = s.wait_for([](const auto& m) { return m.connections_active == 0 && m.responses_by_class[3] == 1; });
  EXPECT_EQ(m.responses_by_class[1], 1u);
  EXPECT_EQ(m.responses_by_class[3], 1u);  // 413
  EXPECT_EQ(m.responses_by_class[4], 1u);  // 503
  EXPECT_EQ(m.connections_active, 0u);
  EXPECT_EQ(m.connections_idle, 0u);
}

// A loop destroyed (io_context's destructor, runtime::stop()) while a spawned
// http::server::serve() still accepts: the loop shutting down cancels the accept, and
// the destructor returns. Run in a child so that a hang is a failure, not a stuck test.
TEST(OpsHttpMetricsAttack, LoopShutdownWithAServeTaskEnds) {
  pid_t pid = ::fork();
  if (pid == 0) {
    {
      ringio::http::router routes;
      ringio::http::server srv(routes);
      auto listener = listen_loopback();
      {
        ringio::io_context ctx(ringio::io_context_options{.quiet = true});
        ctx.spawn(srv.serve(listener));
        ringio::sync_wait(ctx, []() -> ringio::task<void> { (void)co_await ringio::sleep_for(10ms); }());
      }  // ~io_context with the serve task still accepting
    }
    ::_exit(0);
  }
  int st = -1;
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (::waitpid(pid, &st, WNOHANG) == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(5ms);
  const bool ended = ::waitpid(pid, &st, WNOHANG) != 0 || WIFEXITED(st);
  if (!ended) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &st, 0);
  }
  EXPECT_TRUE(ended) << "~io_context did not return within 10 s: the loop spins in accept_loop during shutdown";
  if (ended) {
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << st;
  }
}

// server::metrics() from another thread while connections come and go (TSan).
TEST(OpsHttpMetricsAttack, ServerMetricsReadWhileServing) {
  served_runtime s(2, ringio::http::server_options{});
  std::atomic<bool> done{false};
  std::uint64_t last = 0;
  bool decreased = false;
  std::thread reader([&] {
    while (!done.load()) {
      auto m = s.srv->metrics();
      std::uint64_t total = 0;
      for (auto c : m.responses_by_class) total += c;
      if (total < last) decreased = true;
      last = total;
    }
  });
  std::vector<std::thread> clients;
  for (int i = 0; i < 4; ++i)
    clients.emplace_back([&] {
      for (int k = 0; k < 50; ++k) (void)http_get(s.port, "/");
    });
  for (auto& t : clients) t.join();
  done = true;
  reader.join();
  EXPECT_FALSE(decreased);
  auto m = s.wait_for([](const auto& m) { return m.responses_by_class[1] == 200 && m.connections_active == 0; });
  EXPECT_EQ(m.responses_by_class[1], 200u);
}

// ---------------------------------------------------------------------------------
// The apps' metrics endpoints.

// Scrapes of http_server's own metrics port are not counted in ringio_http_*; requests
// to the main port are, exactly.
TEST(OpsAppMetricsAttack, HttpServerCountsItsRequestsNotItsScrapes) {
  REQUIRE_PARSER();
  app_with_metrics app(HTTP_SERVER_PATH, {});
  ASSERT_NE(app.metrics_port, 0) << app.process.stderr_text();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(http_get(app.metrics_port, "/metrics"));
  for (int i = 0; i < 3; ++i) ASSERT_EQ(http_get(app.port, "/")->status, 200);
  ASSERT_EQ(http_get(app.port, "/no-such-page")->status, 404);
  parsed_page p;
  for (auto deadline = std::chrono::steady_clock::now() + 10s; std::chrono::steady_clock::now() < deadline;) {
    auto a = http_get(app.metrics_port, "/metrics");
    ASSERT_TRUE(a.has_value());
    p = parse_page(a->body);
    ASSERT_TRUE(p.ok) << p.error << a->body;
    if (p.at("ringio_http_connections_active{}") == 0) break;
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(p.at(R"(ringio_http_responses_total{class="2xx"})"), 3);
  EXPECT_EQ(p.at(R"(ringio_http_responses_total{class="4xx"})"), 1);
  EXPECT_EQ(p.sum_of("ringio_http_responses_total"), 4);
  EXPECT_EQ(app.terminate(), std::optional<int>(0));
}

// echo_server: N bytes echoed are exactly N received and N sent on the page.
TEST(OpsAppMetricsAttack, EchoServerBytesExact) {
  REQUIRE_PARSER();
  app_with_metrics app(ECHO_SERVER_PATH, {"--threads", "2"});
  ASSERT_NE(app.metrics_port, 0) << app.process.stderr_text();
  std::size_t total = 0;
  for (int c = 0; c < 4; ++c) {
    int fd = connect_loopback(app.port);
    ASSERT_GE(fd, 0);
    std::string chunk(1000 + 777 * c, 'x');
    ASSERT_TRUE(send_text(fd, chunk));
    std::string back(chunk.size(), 0);
    ASSERT_EQ(::recv(fd, back.data(), back.size(), MSG_WAITALL), static_cast<ssize_t>(back.size()));
    total += chunk.size();
    ::close(fd);
  }
  // Every echo came back, so the server counted it. One scrape: the metrics server runs
  // on loop 0, so its own request is a socket read of that loop too.
  std::this_thread::sleep_for(100ms);
  auto a = http_get(app.metrics_port, "/metrics");
  ASSERT_TRUE(a.has_value());
  parsed_page p = parse_page(a->body);
  ASSERT_TRUE(p.ok) << p.error << a->body;
  total += std::string_view("GET /metrics HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n").size();
  EXPECT_EQ(p.sum_of("ringio_loop_bytes_received_total"), static_cast<double>(total));
  EXPECT_EQ(p.sum_of("ringio_loop_bytes_sent_total"), static_cast<double>(total - 56));
  EXPECT_EQ(app.terminate(), std::optional<int>(0));
}

// Eight scrapers and four clients at once: every scrape answered 200 and parsed, each
// scraper's counters never go down; the server then stops cleanly.
TEST(OpsAppMetricsAttack, ConcurrentScrapesDuringLoad) {
  REQUIRE_PARSER();
  app_with_metrics app(HTTP_SERVER_PATH, {"--threads", "2"});
  ASSERT_NE(app.metrics_port, 0) << app.process.stderr_text();
  std::atomic<bool> done{false};
  std::atomic<int> failures{0}, scrapes{0};
  std::mutex pages_mu;
  std::vector<std::string> pages;
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] {
      while (!done.load()) {
        auto a = http_get(app.metrics_port, "/metrics");
        if (!a || a->status != 200) {
          ++failures;
          continue;
        }
        ++scrapes;
        if (i == 0) {
          std::lock_guard l(pages_mu);
          if (pages.size() < 20) pages.push_back(a->body);
        }
      }
    });
  std::vector<std::thread> clients;
  for (int i = 0; i < 4; ++i)
    clients.emplace_back([&] {
      for (int k = 0; k < 100; ++k)
        if (auto a = http_get(app.port, "/"); !a || a->status != 200) ++failures;
    });
  for (auto& t : clients) t.join();
  done = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(scrapes.load(), 0);
  double last = 0;
  for (auto& page : pages) {
    auto p = parse_page(page);
    ASSERT_TRUE(p.ok) << p.error;
    double now = p.sum_of("ringio_operations_completed_total");
    EXPECT_GE(now, last);
    last = now;
  }
  EXPECT_EQ(app.terminate(), std::optional<int>(0));
}

// A scraper that asks and never reads (a tiny receive window): other scrapes and the
// main port are still served, and SIGTERM still ends the server within the drain time.
TEST(OpsAppMetricsAttack, SlowScraperStallsNoOne) {
  app_with_metrics app(HTTP_SERVER_PATH, {"--drain-timeout", "1"});
  ASSERT_NE(app.metrics_port, 0) << app.process.stderr_text();
  std::vector<int> slow;
  for (int i = 0; i < 4; ++i) {
    int fd = connect_loopback(app.metrics_port, 1024);
    ASSERT_GE(fd, 0);
    std::string many;
    for (int k = 0; k < 50; ++k) many += "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n";  // pipelined, never read
    ASSERT_TRUE(send_text(fd, many));
    slow.push_back(fd);
  }
  std::this_thread::sleep_for(200ms);
  auto start = std::chrono::steady_clock::now();
  auto a = http_get(app.metrics_port, "/metrics");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->status, 200);
  auto b = http_get(app.port, "/");
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(app.terminate(10s), std::optional<int>(0)) << app.process.stderr_text();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 8s);
  for (int fd : slow) ::close(fd);
}

// Scrapes and requests keep coming while SIGTERM drains the server: it exits 0 in time.
TEST(OpsAppMetricsAttack, ScrapesWhileDraining) {
  for (int round = 0; round < 3; ++round) {
    app_with_metrics app(HTTP_SERVER_PATH, {"--threads", "2", "--drain-timeout", "1"});
    ASSERT_NE(app.metrics_port, 0) << app.process.stderr_text();
    std::atomic<bool> done{false};
    std::vector<std::thread> threads;
    for (int i = 0; i < 6; ++i)
      threads.emplace_back([&, i] {
        while (!done.load()) (void)http_get(i % 2 ? app.port : app.metrics_port, i % 2 ? "/" : "/metrics");
      });
    std::this_thread::sleep_for(100ms);
    auto st = app.terminate(15s);
    done = true;
    for (auto& t : threads) t.join();
    EXPECT_EQ(st, std::optional<int>(0)) << app.process.stderr_text();
  }
}

TEST(OpsAppMetricsAttack, BadMetricsPortIsUsageAndExitTwo) {
  for (const char* bad : {"70000", "abc", "-1", ""}) {
    for (const char* app : {HTTP_SERVER_PATH, ECHO_SERVER_PATH}) {
      confined_process p({app, "--port", "0", "--metrics-port", bad}, [] { return true; });
      EXPECT_EQ(p.wait(10s), std::optional<int>(2)) << app << " --metrics-port '" << bad << "'";
      EXPECT_NE(p.stderr_text().find("usage"), std::string::npos) << app << " " << bad << p.stderr_text();
    }
  }
  for (const char* app : {HTTP_SERVER_PATH, ECHO_SERVER_PATH}) {
    confined_process p({app, "--port", "0", "--metrics-port"}, [] { return true; });
    EXPECT_EQ(p.wait(10s), std::optional<int>(2)) << app << " --metrics-port (no value)";
  }
}

}  // namespace
