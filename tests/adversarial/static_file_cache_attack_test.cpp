// SPDX-License-Identifier: Apache-2.0
// The open-file cache of static_files held to its promises over real sockets and real
// files, on every backend: a cached file truncated or grown in place while it is sent;
// a cached path that comes to name a directory, a symlink out of the root, a FIFO or a
// device; paths that alias cached keys; two handlers on one loop and one handler on two
// loops; descriptors running out while the cache holds many; eviction while clients
// stream, reset or stall; stops with sends in flight; validators and ranges after the
// validity interval; HEAD; extreme intervals; a one-entry cache.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "http/http_client.hpp"
#include "http/server_fixture.hpp"
#include "ringio/http/static_files.hpp"
#include "ringio/scope.hpp"
#include "ringio/time/sleep.hpp"
#include "support/file_edits.hpp"

using namespace ringio_test;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// Overwrites the first bytes of `p` in place (same inode, same size if data fits).
void overwrite_in_place(const fs::path& p, const std::string& data) {
  std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
  f << data;
}

void set_mtime(const fs::path& p, timespec t) {
  timespec times[2] = {t, t};
  ASSERT_EQ(::utimensat(AT_FDCWD, p.c_str(), times, 0), 0) << std::strerror(errno);
}

timespec mtime_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0);
  return st.st_mtim;
}

std::string pattern(std::size_t n, char base = 'a') {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>(base + (i * 7 + i / 251) % 26);
  return s;
}

// The highest descriptor number open in this process.
int highest_fd() {
  int high = -1;
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  const int own = ::dirfd(d);
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    int fd = std::atoi(e->d_name);
    if (fd != own) high = std::max(high, fd);
  }
  ::closedir(d);
  return high;
}

// A raw client socket: optional small receive buffer (a slow reader), receive timeout.
int connect_raw(std::uint16_t port, int rcvbuf = 0, int timeout_ms = 10'000) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (rcvbuf > 0) ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

bool send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// One response read off a raw socket, however it ends.
struct raw_reply {
  int status = 0;
  long content_length = -1;
  std::string head, body;
  bool ended_by_close = false;  // EOF or reset before the announced length
  bool timed_out = false;       // nothing came for the receive timeout
};

// Reads one response (head, then Content-Length bytes unless `head_only`); `step`, if
// given, runs after each receive with the body bytes so far, and may pause.
raw_reply read_raw(int fd, std::string& buf, bool head_only = false, const std::function<void(std::size_t)>& step = {},
                   std::size_t chunk = 65536) {
  raw_reply r;
  std::vector<char> tmp(chunk);
  auto fill = [&]() -> bool {
    ssize_t n;
    do n = ::recv(fd, tmp.data(), tmp.size(), 0);
    while (n < 0 && errno == EINTR);
    if (n > 0) {
      buf.append(tmp.data(), static_cast<std::size_t>(n));
      return true;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      r.timed_out = true;
    } else {
      r.ended_by_close = true;
    }
    return false;
  };
  std::size_t end;
  while ((end = buf.find("\r\n\r\n")) == std::string::npos)
    if (!fill()) return r;
  r.head = buf.substr(0, end);
  buf.erase(0, end + 4);
  if (r.head.size() >= 12) r.status = std::atoi(r.head.c_str() + 9);
  const std::string cl = "\r\nContent-Length: ";
  if (auto p = r.head.find(cl); p != std::string::npos) r.content_length = std::atol(r.head.c_str() + p + cl.size());
  if (head_only || r.status == 304 || r.content_length < 0) return r;
  const auto want = static_cast<std::size_t>(r.content_length);
  while (buf.size() < want) {
    if (step) step(buf.size());
    if (!fill()) break;
  }
  const std::size_t take = std::min(buf.size(), want);
  r.body = buf.substr(0, take);
  buf.erase(0, take);
  return r;
}

void reset_close(int fd) {
  linger lg{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  ::close(fd);
}

// Restores RLIMIT_NOFILE when it goes.
struct nofile_guard {
  rlimit saved{};
  nofile_guard() { ::getrlimit(RLIMIT_NOFILE, &saved); }
  ~nofile_guard() { ::setrlimit(RLIMIT_NOFILE, &saved); }
};

class StaticFileCacheAttack : public http_server_test {
 protected:
  void SetUp() override {
    http_server_test::SetUp();
    if (IsSkipped()) return;
    char tmpl[] = "/tmp/ringio-fcattack-XXXXXX";
    base_ = mkdtemp(tmpl);
    root_ = base_ / "root";
    fs::create_directories(root_ / "sub");
    fs::create_directories(base_ / "outside");
    write_file(root_ / "a.txt", "first");
    write_file(root_ / "sub" / "index.html", "<p>sub</p>");
    write_file(base_ / "secret.txt", "top secret");
    write_file(base_ / "outside" / "s.txt", "outside secret");
  }
  void TearDown() override {
    http_server_test::TearDown();
    if (!base_.empty()) fs::remove_all(base_);
  }
  void serve(ringio::http::static_files_options opts, ringio::http::server_options sopts = {}) {
    routes_.prefix("/", ringio::http::static_files(root_.string(), std::move(opts)));
    start_server(routes_, std::move(sopts));
  }
  std::optional<http_reply> get(const std::string& path, const std::string& extra = {}) {
    http_client c(port());
    return c.exchange(get_request(path, extra));
  }
  int status_of(const std::string& path) {
    auto r = get(path);
    return r ? r->status : -1;
  }
  std::string body_of(const std::string& path) {
    auto r = get(path);
    if (!r) return "(no reply)";
    return r->status == 200 ? r->body : "(status " + std::to_string(r->status) + ")";
  }

  fs::path base_, root_;
  ringio::http::router routes_;
};

// --- Files changed in place while a cached descriptor sends them --------------------

// A large cached file truncated in place while a slow client receives it: the client
// gets the announced length, or a shorter body on a connection the server closed;
// never a hang on an open connection, and the server goes on serving.
void truncate_while_sending(std::uint16_t port, const fs::path& file) {
  const std::size_t size = 8u << 20;
  const std::string data = pattern(size);
  write_file(file, data);
  const std::string req = get_request("/" + file.filename().string());
  {  // cache it
    http_client c(port, 20'000);
    auto r = c.exchange(req);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->body.size(), size);
  }
  int fd = connect_raw(port, 8192, 5000);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(send_all(fd, req));
  std::string buf;
  bool truncated = false;
  auto r = read_raw(
      fd, buf, false,
      [&](std::size_t got) {
        if (!truncated && got >= 256 * 1024) {
          truncated = true;
          ASSERT_EQ(::truncate(file.c_str(), 1 << 20), 0);
        }
      },
      16384);
  EXPECT_TRUE(truncated);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_length, static_cast<long>(size));
  EXPECT_FALSE(r.timed_out) << "a body cut short by truncation left the connection open (" << r.body.size() << " of "
                            << size << " bytes)";
  if (r.body.size() < size) {
    EXPECT_TRUE(r.ended_by_close);
  }
  // sendfile(2) sends the page cache: bytes past the new end may come as zeros (as a
  // read of the truncated file then extended would give), never other bytes.
  std::size_t foreign = 0, zeros = 0;
  for (std::size_t i = 0; i < r.body.size(); ++i) {
    if (r.body[i] == data[i]) continue;
    if (r.body[i] == '\0') {
      ++zeros;
    } else {
      ++foreign;
    }
  }
  EXPECT_EQ(foreign, 0u) << "bytes that are neither the file's nor zeros";
  std::printf("%zu of %zu body bytes received, %zu of them zeros past the truncation\n", r.body.size(), size, zeros);
  ::close(fd);
}

TEST_P(StaticFileCacheAttack, AFileTruncatedDuringACachedSendfileEndsTheConnection) {
  serve({.open_file_cache_valid_for = std::chrono::hours(1)});
  truncate_while_sending(port(), root_ / "big.bin");
  EXPECT_EQ(body_of("/a.txt"), "first") << "the server goes on";
}

TEST_P(StaticFileCacheAttack, AFileTruncatedDuringACachedReadThroughTheLoopEndsTheConnection) {
  serve({.open_file_cache_valid_for = std::chrono::hours(1)}, {.sendfile = false});
  truncate_while_sending(port(), root_ / "big.bin");
  EXPECT_EQ(body_of("/a.txt"), "first") << "the server goes on";
}

// A cached file grown in place within the interval: the response is the cached length
// and the next response on the same keep-alive connection is parsed where it starts.
TEST_P(StaticFileCacheAttack, AFileGrownInPlaceSendsTheCachedLengthAndTheConnectionStaysInStep) {
  for (bool sendfile : {true, false}) {
    SCOPED_TRACE(sendfile ? "sendfile" : "read through the loop");
    routes_ = ringio::http::router();
    serve({.open_file_cache_valid_for = std::chrono::hours(1)}, {.sendfile = sendfile});
    for (std::size_t size : {std::size_t{3000}, std::size_t{200'000}}) {
      const fs::path f = root_ / ("grow" + std::to_string(size));
      write_file(f, std::string(size, 'x'));
      http_client c(port());
      auto r = c.exchange(get_request("/" + f.filename().string()));
      ASSERT_TRUE(r);
      ASSERT_EQ(r->body.size(), size);
      { std::ofstream(f, std::ios::binary | std::ios::app) << std::string(size, 'y'); }
      r = c.exchange(get_request("/" + f.filename().string()));
      ASSERT_TRUE(r);
      EXPECT_EQ(r->header("Content-Length"), std::to_string(size));
      EXPECT_EQ(r->body, std::string(size, 'x'));
      r = c.exchange(get_request("/a.txt"));
      ASSERT_TRUE(r) << "the next response on the connection";
      EXPECT_EQ(r->status, 200);
      EXPECT_EQ(r->body, "first");
    }
    stop_server();
  }
}

// --- A cached path that comes to name something else ------------------------------

TEST_P(StaticFileCacheAttack, AFileReplacedByADirectoryIsNoLongerServed) {
  serve({.open_file_cache_valid_for = 100ms});
  EXPECT_EQ(body_of("/x.txt"), "(status 404)");
  write_file(root_ / "x.txt", "file");
  EXPECT_EQ(body_of("/x.txt"), "file");
  fs::remove(root_ / "x.txt");
  fs::create_directories(root_ / "x.txt");
  write_file(root_ / "x.txt" / "index.html", "dir index");
  std::this_thread::sleep_for(250ms);
  auto r = get("/x.txt");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 301) << r->body;
  EXPECT_EQ(body_of("/x.txt/"), "dir index");
  // An index file that becomes a directory: no listing, no old bytes.
  EXPECT_EQ(body_of("/sub/"), "<p>sub</p>");
  fs::remove(root_ / "sub" / "index.html");
  fs::create_directories(root_ / "sub" / "index.html");
  std::this_thread::sleep_for(250ms);
  EXPECT_EQ(status_of("/sub/"), 404);
  EXPECT_EQ(status_of("/sub/index.html"), 301);
  // A directory on the cached path's way that becomes a file.
  fs::create_directories(root_ / "d");
  write_file(root_ / "d" / "f.txt", "in d");
  EXPECT_EQ(body_of("/d/f.txt"), "in d");
  fs::remove_all(root_ / "d");
  write_file(root_ / "d", "now a file");
  std::this_thread::sleep_for(250ms);
  EXPECT_EQ(status_of("/d/f.txt"), 404);
}

TEST_P(StaticFileCacheAttack, ACachedPathThatBecomesASymlinkOutOfTheRootNeverLeadsOut) {
  serve({.open_file_cache_valid_for = 100ms});
  write_file(root_ / "x.txt", "inside");
  write_file(root_ / "y.txt", "also inside");
  fs::create_symlink("y.txt", root_ / "link");
  fs::create_directories(root_ / "dir");
  write_file(root_ / "dir" / "s.txt", "inside dir");
  EXPECT_EQ(body_of("/x.txt"), "inside");
  EXPECT_EQ(body_of("/link"), "also inside");
  EXPECT_EQ(body_of("/dir/s.txt"), "inside dir");
  // The file itself, a symlink's target, and a directory on the way, each swapped
  // (by rename) for a symlink out of the root.
  fs::create_symlink(base_ / "secret.txt", root_ / "x.tmp");
  fs::rename(root_ / "x.tmp", root_ / "x.txt");
  fs::create_symlink("../secret.txt", root_ / "link.tmp");
  fs::rename(root_ / "link.tmp", root_ / "link");
  fs::remove_all(root_ / "dir");
  fs::create_directory_symlink(base_ / "outside", root_ / "dir");
  std::this_thread::sleep_for(250ms);
  for (const char* path : {"/x.txt", "/link", "/dir/s.txt"}) {
    for (int i = 0; i < 3; ++i) {
      auto r = get(path);
      ASSERT_TRUE(r) << path;
      EXPECT_EQ(r->status, 403) << path;
      EXPECT_EQ(r->body.find("secret"), std::string::npos) << path << ": " << r->body;
    }
  }
}

// Opening a FIFO for reading waits for a writer: a cached path that comes to name one
// must be answered (not 200 from a pipe) and must not hold up other requests or the stop.
void fifo_probe(std::uint16_t port, const fs::path& root, bool cached_first) {
  if (cached_first) {
    write_file(root / "p", "regular");
    http_client c(port);
    auto r = c.exchange(get_request("/p"));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "regular");
  }
  ASSERT_EQ(::mkfifo((root / "p.tmp").c_str(), 0644), 0);
  fs::rename(root / "p.tmp", root / "p");
  std::this_thread::sleep_for(250ms);
  std::atomic<bool> done{false};
  std::optional<http_reply> fifo_reply;
  std::thread requester([&] {
    http_client c(port, 5000);
    fifo_reply = c.exchange(get_request("/p"));
    done = true;
  });
  std::this_thread::sleep_for(200ms);
  {
    http_client c(port, 5000);
    auto r = c.exchange(get_request("/a.txt"));
    EXPECT_TRUE(r) << "another request while one names a FIFO";
    if (r) {
      EXPECT_EQ(r->body, "first");
    }
  }
  for (int i = 0; i < 600 && !done; ++i) std::this_thread::sleep_for(10ms);
  const bool answered_in_time = done.load();
  // Whatever waits in open(2) on the FIFO is let go, so that the test ends.
  while (!done) {
    int w = ::open((root / "p").c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (w >= 0) ::close(w);
    std::this_thread::sleep_for(10ms);
  }
  requester.join();
  EXPECT_TRUE(answered_in_time) << "a request for a FIFO was not answered within 6 s";
  EXPECT_TRUE(fifo_reply) << "a request for a FIFO got no reply";
  if (fifo_reply) {
    EXPECT_GE(fifo_reply->status, 400);
  }
}

TEST_P(StaticFileCacheAttack, ACachedPathThatBecomesAFifoIsAnsweredAtOnce) {
  serve({.open_file_cache_valid_for = 100ms});
  fifo_probe(port(), root_, true);
}

TEST_P(StaticFileCacheAttack, AFifoIsAnsweredAtOnceWithTheCacheOff) {
  serve({.open_file_cache_entries = 0});
  fifo_probe(port(), root_, false);
}

TEST_P(StaticFileCacheAttack, ACachedPathThatBecomesADeviceIsNotStreamedForever) {
  if (::mknod((root_ / "dev.tmp").c_str(), S_IFCHR | 0644, makedev(1, 5)) != 0)
    GTEST_SKIP() << "cannot make a device node here: " << std::strerror(errno);
  serve({.open_file_cache_valid_for = 100ms});
  write_file(root_ / "dev", "regular");
  EXPECT_EQ(body_of("/dev"), "regular");
  fs::rename(root_ / "dev.tmp", root_ / "dev");  // now /dev/zero's device
  std::this_thread::sleep_for(250ms);
  for (int i = 0; i < 2; ++i) {
    int fd = connect_raw(port(), 0, 5000);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(send_all(fd, get_request("/dev")));
    std::string buf;
    auto r = read_raw(fd, buf);
    EXPECT_FALSE(r.timed_out) << "no whole reply within 5 s for a device";
    EXPECT_GE(r.status, 400) << r.head;
    ::close(fd);
  }
  EXPECT_EQ(body_of("/a.txt"), "first");
}

// --- Paths that alias cached keys --------------------------------------------------

TEST_P(StaticFileCacheAttack, PathsAliasingCachedKeysStayInsideAndApart) {
  write_file(root_ / "a b.txt", "space");
  write_file(root_ / "a%20b.txt", "percent");
  write_file(root_ / "A.txt", "upper");
  write_file(root_ / "sub" / "a.txt", "sub a");
  routes_.prefix("/static/", ringio::http::static_files(root_.string()));
  serve({.open_file_cache_valid_for = std::chrono::hours(1)});
  for (int round = 0; round < 2; ++round) {  // the second round from the cache
    SCOPED_TRACE(round);
    EXPECT_EQ(body_of("/a.txt"), "first");
    EXPECT_EQ(body_of("/sub/"), "<p>sub</p>");
    EXPECT_EQ(body_of("/a%20b.txt"), "space");
    EXPECT_EQ(body_of("/a%2520b.txt"), "percent");
    EXPECT_EQ(body_of("/A.txt"), "upper");
    EXPECT_EQ(body_of("/sub/a.txt"), "sub a");
    EXPECT_EQ(body_of("/static/sub/a.txt"), "sub a");
    EXPECT_EQ(body_of("/%61.txt"), "first");
    EXPECT_EQ(body_of("/a.txt?../../secret.txt"), "first");
    EXPECT_EQ(body_of("/sub/?x=/../../secret.txt"), "<p>sub</p>");
    EXPECT_EQ(body_of("//a.txt"), "first");
    EXPECT_EQ(body_of("/sub//index.html"), "<p>sub</p>");
    EXPECT_EQ(body_of("/sub/./index.html"), "<p>sub</p>");
    EXPECT_EQ(body_of("/sub/index.html"), "<p>sub</p>");
    for (const char* path : {"/sub/../a.txt", "/sub/%2e%2e/a.txt", "/sub/%2E%2E/sub/a.txt", "/../secret.txt",
                             "/%2e%2e/secret.txt", "/sub/../../secret.txt", "/static/../secret.txt",
                             "/static/%2e%2e/secret.txt", "/a.txt/", "/sub/index.html/", "/a.txt/.", "/SUB/"}) {
      auto r = get(path);
      ASSERT_TRUE(r) << path;
      EXPECT_EQ(r->status, 404) << path << ": " << r->body;
    }
    for (const char* path : {"/..%2fsecret.txt", "/a.txt%00", "/sub%2findex.html"}) {
      auto r = get(path);
      ASSERT_TRUE(r) << path;
      EXPECT_GE(r->status, 400) << path << ": " << r->body;
      EXPECT_EQ(r->body.find("secret"), std::string::npos) << path;
      EXPECT_NE(r->body, "<p>sub</p>") << path;
    }
  }
}

// --- Two handlers, two loops -------------------------------------------------------

TEST_P(StaticFileCacheAttack, TwoHandlersOnOneLoopKeepTheirOwnEntries) {
  const fs::path other = base_ / "other";
  fs::create_directories(other / "sub");
  write_file(other / "a.txt", "other first");
  write_file(other / "sub" / "index.html", "<p>other sub</p>");
  routes_.prefix("/one/", ringio::http::static_files(root_.string()));
  routes_.prefix("/two/", ringio::http::static_files(other.string()));
  routes_.prefix("/long/", ringio::http::static_files(root_.string(), {.open_file_cache_valid_for = 1h}));
  routes_.prefix("/zero/", ringio::http::static_files(root_.string(), {.open_file_cache_valid_for = 0ms}));
  start_server(routes_);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(body_of("/one/a.txt"), "first");
    EXPECT_EQ(body_of("/two/a.txt"), "other first");
    EXPECT_EQ(body_of("/one/sub/"), "<p>sub</p>");
    EXPECT_EQ(body_of("/two/sub/"), "<p>other sub</p>");
    EXPECT_EQ(body_of("/long/a.txt"), "first");
    EXPECT_EQ(body_of("/zero/a.txt"), "first");
  }
  replace_file(root_ / "a.txt", "second");
  EXPECT_EQ(body_of("/zero/a.txt"), "second") << "checked on every request";
  EXPECT_EQ(body_of("/long/a.txt"), "first") << "trusted for an hour";
  EXPECT_EQ(body_of("/two/a.txt"), "other first");
}

TEST_P(StaticFileCacheAttack, OneHandlerOnTwoLoopsUnderReplacements) {
  constexpr int files = 16;
  for (int i = 0; i < files; ++i) write_file(root_ / ("f" + std::to_string(i)), std::string(3000, 'a'));
  ringio::http::router routes;
  routes.prefix("/", ringio::http::static_files(root_.string(),
                                                {.open_file_cache_entries = 4, .open_file_cache_valid_for = 1ms}));
  ringio::http::server srv(routes, {.log = [](std::string_view) {}});
  std::stop_source stop;
  ringio::stream_listener listeners[2] = {listen_loopback(), listen_loopback()};
  const std::uint16_t ports[2] = {address_of(listeners[0]).port(), address_of(listeners[1]).port()};
  std::vector<std::thread> loops;
  for (int l = 0; l < 2; ++l) {
    loops.emplace_back([&, l, backend = GetParam()] {
      ringio::io_context ctx(ringio::io_context_options{.backend = backend, .quiet = true});
      ringio::sync_wait(ctx, srv.serve(listeners[l], stop.get_token()));
    });
  }
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 0; !done; ++i) {
      replace_file(root_ / ("f" + std::to_string(i % files)), std::string(i % 2 == 0 ? 70'000 : 3000, 'a' + i % 2));
      std::this_thread::sleep_for(300us);
    }
  });
  std::atomic<int> bad{0}, whole{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&, c] {
      std::mt19937 rng(static_cast<unsigned>(c));
      auto client = std::make_unique<http_client>(ports[c % 2]);
      const auto end = std::chrono::steady_clock::now() + 1500ms;
      while (std::chrono::steady_clock::now() < end) {
        auto r = client->exchange(get_request("/f" + std::to_string(rng() % files)));
        if (!r) {
          client = std::make_unique<http_client>(ports[c % 2]);
          continue;
        }
        const bool ok = r->status == 200 && (r->body == std::string(3000, 'a') || r->body == std::string(70'000, 'a') ||
                                             r->body == std::string(3000, 'b') || r->body == std::string(70'000, 'b'));
        if (!ok) ++bad;
        ++whole;
      }
    });
  }
  for (auto& t : clients) t.join();
  done = true;
  writer.join();
  stop.request_stop();
  for (auto& t : loops) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(whole.load(), 0);
  EXPECT_EQ(fds_below(root_), 0) << "both loops ended: every cached file closed";
}

// --- Descriptors running out ---------------------------------------------------------

TEST_P(StaticFileCacheAttack, RunningOutOfDescriptorsWhileTheCacheHoldsThemStillAnswersEveryRequest) {
#if defined(RINGIO_SANITIZED)
  GTEST_SKIP() << "the sanitizer runtime needs descriptors of its own (UBSan's check of a virtual call opens a "
                  "pipe to test that the vtable is readable, and reports an invalid vptr when it cannot), and "
                  "this test leaves the process none";
#endif
  nofile_guard guard;
  constexpr int files = 300;
  for (int i = 0; i < files; ++i) write_file(root_ / ("f" + std::to_string(i)), "file " + std::to_string(i));
  serve({});  // 1024 entries; an eighth of the limit at first use is more
  std::vector<std::unique_ptr<http_client>> clients;
  for (int i = 0; i < 4; ++i) clients.push_back(std::make_unique<http_client>(port()));
  ASSERT_EQ(clients[0]->exchange(get_request("/a.txt"))->body, "first");  // the handler's first use
  std::this_thread::sleep_for(100ms);
  // The pipe that brings the other process's verdict back is made before the limit is
  // lowered: while the cache holds every descriptor the limit allows, this thread could
  // not make one either.
  int pipefd[2];
  ASSERT_EQ(::pipe2(pipefd, O_CLOEXEC), 0);
  const int high = highest_fd();
  rlimit lowered = guard.saved;
  lowered.rlim_cur = static_cast<rlim_t>(high + 1 + 24);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &lowered), 0);
  int not_ok = 0;
  std::string first_failure;
  for (int i = 0; i < files; ++i) {
    auto& c = *clients[static_cast<std::size_t>(i) % clients.size()];
    const std::string path = i % 10 == 9 ? "/sub/" : "/f" + std::to_string(i);
    auto r = c.exchange(get_request(path));
    const std::string want = i % 10 == 9 ? "<p>sub</p>" : "file " + std::to_string(i);
    if (!r || r->status != 200 || r->body != want) {
      if (not_ok++ == 0)
        first_failure = path + ": " + (r ? std::to_string(r->status) + " " + r->body.substr(0, 100) : "no reply");
    }
  }
  EXPECT_EQ(not_ok, 0) << "requests not answered 200 while descriptors ran out; first: " << first_failure;
  // A new connection needs a descriptor for its accept: another process connects.
  const std::uint16_t p = port();
  pid_t child = ::fork();
  if (child == 0) {
    ::setrlimit(RLIMIT_NOFILE, &guard.saved);
    char out = 'n';
    int fd = connect_raw(p, 0, 5000);
    if (fd >= 0 && send_all(fd, "GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n")) {
      char b[64];
      ssize_t n = ::recv(fd, b, sizeof b, MSG_WAITALL);
      if (n >= 12 && std::memcmp(b, "HTTP/1.1 200", 12) == 0) {
        out = 'y';
      } else if (n >= 12) {
        out = b[9];
      } else {
        out = 't';
      }
    }
    (void)::write(pipefd[1], &out, 1);
    ::_exit(0);
  }
  ::close(pipefd[1]);
  char verdict = '?';
  (void)::read(pipefd[0], &verdict, 1);
  ::close(pipefd[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_EQ(verdict, 'y') << "a new connection while the cache holds every descriptor the limit allows ('t': no "
                             "reply within 5 s; a digit: the status's first digit)";
  ::setrlimit(RLIMIT_NOFILE, &guard.saved);  // counting needs a descriptor of its own
  std::printf("%d files of the root open in the cache under a limit of %d descriptors\n", fds_below(root_),
              static_cast<int>(lowered.rlim_cur));
  clients.clear();
  stop_server();
  EXPECT_EQ(fds_below(root_), 0);
}

// --- Eviction, resets and stalls while cached files are sent -------------------------

// Clients stream two large files through a one-entry cache (every request evicts the
// other file's entry, often while it is being sent), while pipes are opened and checked
// on the side: a descriptor closed twice would close one of them under the checker.
TEST_P(StaticFileCacheAttack, EvictionWhileKeepAliveClientsStreamTheEvictedFile) {
  const std::string a = pattern(3u << 20, 'a'), b = pattern(3u << 20, 'A');
  write_file(root_ / "A", a);
  write_file(root_ / "B", b);
  serve({.open_file_cache_entries = 1});
  std::atomic<bool> done{false};
  std::atomic<int> sentinel_failures{0};
  std::thread checker([&] {
    while (!done) {
      int p[2];
      if (::pipe2(p, O_CLOEXEC) != 0) continue;
      std::this_thread::sleep_for(1ms);
      char c = 'z';
      if (::write(p[1], &c, 1) != 1 || ::read(p[0], &c, 1) != 1 || c != 'z') ++sentinel_failures;
      if (::close(p[0]) != 0 || ::close(p[1]) != 0) ++sentinel_failures;
    }
  });
  std::atomic<int> bad{0}, whole{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 6; ++c) {
    clients.emplace_back([&, c] {
      int fd = connect_raw(port(), c % 2 == 0 ? 16384 : 0, 10'000);
      std::string buf;
      const auto end = std::chrono::steady_clock::now() + 1500ms;
      for (int i = 0; std::chrono::steady_clock::now() < end; ++i) {
        const bool want_a = (i + c) % 2 == 0;
        if (!send_all(fd, get_request(want_a ? "/A" : "/B"))) {
          ++bad;
          break;
        }
        auto r = read_raw(fd, buf, false, {}, c % 2 == 0 ? 4096 : 65536);
        if (r.status != 200 || r.body != (want_a ? a : b)) {
          ++bad;
          break;
        }
        ++whole;
      }
      ::close(fd);
    });
  }
  for (auto& t : clients) t.join();
  done = true;
  checker.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(whole.load(), 0);
  EXPECT_EQ(sentinel_failures.load(), 0) << "a descriptor of this process was closed under its owner";
  std::this_thread::sleep_for(100ms);
  EXPECT_LE(fds_below(root_), 1);
  stop_server();
  EXPECT_EQ(fds_below(root_), 0);
}

// A slow client receives a cached file while other requests evict its entry: it gets
// every byte, and the descriptor closes once the send is over.
TEST_P(StaticFileCacheAttack, AnEvictedEntryStaysOpenUntilItsSendEnds) {
  for (bool sendfile : {true, false}) {
    SCOPED_TRACE(sendfile ? "sendfile" : "read through the loop");
    routes_ = ringio::http::router();
    const std::string big = pattern(6u << 20);
    write_file(root_ / "big", big);
    for (int i = 0; i < 4; ++i) write_file(root_ / ("s" + std::to_string(i)), "small " + std::to_string(i));
    serve({.open_file_cache_entries = 1}, {.sendfile = sendfile});
    int fd = connect_raw(port(), 8192);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(send_all(fd, get_request("/big")));
    std::string buf;
    bool evicted = false;
    auto r = read_raw(
        fd, buf, false,
        [&](std::size_t got) {
          if (!evicted && got >= 128 * 1024) {
            evicted = true;
            for (int i = 0; i < 4; ++i) EXPECT_EQ(body_of("/s" + std::to_string(i)), "small " + std::to_string(i));
            EXPECT_LE(fds_below(root_), 2) << "the entry in use and the newest";
          }
        },
        8192);
    EXPECT_TRUE(evicted);
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body.size(), big.size());
    EXPECT_TRUE(r.body == big) << "the body of an evicted entry differs from the file";
    ::close(fd);
    std::this_thread::sleep_for(200ms);
    EXPECT_LE(fds_below(root_), 1) << "an evicted entry stayed open after its send";
    stop_server();
    EXPECT_EQ(fds_below(root_), 0);
  }
}

TEST_P(StaticFileCacheAttack, ClientsResettingMidBodyLeaveNothingOpen) {
  const std::string big = pattern(4u << 20);
  write_file(root_ / "big", big);
  write_file(root_ / "big2", big);
  serve({.open_file_cache_entries = 1}, {.send_timeout = 5s});
  for (int i = 0; i < 30; ++i) {
    int fd = connect_raw(port(), 4096);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(send_all(fd, get_request(i % 2 == 0 ? "/big" : "/big2")));
    char tmp[4096];
    std::size_t got = 0;
    while (got < static_cast<std::size_t>(i % 5) * 8192 + 1) {
      ssize_t n = ::recv(fd, tmp, sizeof tmp, 0);
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    reset_close(fd);
  }
  http_client c(port(), 20'000);
  auto r = c.exchange(get_request("/big"));
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->body == big);
  std::this_thread::sleep_for(300ms);
  EXPECT_LE(fds_below(root_), 1);
  stop_server();
  EXPECT_EQ(fds_below(root_), 0);
}

// A graceful stop while stalled clients hold sends of cached files: the sends time out,
// the stop completes and every cached descriptor is closed.
TEST_P(StaticFileCacheAttack, AStopWithSendsInFlightFromCachedEntriesClosesEverything) {
  const std::string big = pattern(8u << 20);
  write_file(root_ / "big", big);
  serve({}, {.send_timeout = 1s});
  std::vector<int> stalled;
  for (int i = 0; i < 6; ++i) {
    int fd = connect_raw(port(), 4096);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(send_all(fd, get_request("/big")));
    stalled.push_back(fd);
  }
  std::this_thread::sleep_for(300ms);
  const auto t0 = std::chrono::steady_clock::now();
  stop_server();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 20s);
  EXPECT_EQ(fds_below(root_), 0);
  for (int fd : stalled) ::close(fd);
}

// The loop's task that serves is stopped (every connection cancelled at once) and the
// io_context destroyed while sends from cached entries are in flight.
TEST_P(StaticFileCacheAttack, ALoopDestroyedWithSendsInFlightFromCachedEntries) {
  const std::string big = pattern(8u << 20);
  write_file(root_ / "big", big);
  write_file(root_ / "big2", big);
  ringio::http::router routes;
  routes.prefix("/", ringio::http::static_files(root_.string(), {.open_file_cache_entries = 1}));
  for (bool sendfile : {true, false}) {
    SCOPED_TRACE(sendfile ? "sendfile" : "read through the loop");
    ringio::http::server srv(routes, {.sendfile = sendfile, .log = [](std::string_view) {}});
    auto listener = listen_loopback();
    const std::uint16_t p = address_of(listener).port();
    std::atomic<bool> stop_now{false};
    std::thread loop([&, backend = GetParam()] {
      ringio::io_context ctx(ringio::io_context_options{.backend = backend, .quiet = true});
      auto body = [&]() -> ringio::task<void> {
        ringio::scope sc;
        sc.spawn(srv.serve(listener));
        while (!stop_now.load()) (void)co_await ringio::sleep_for(5ms);
        sc.request_stop();
        co_await sc.join();
      };
      ringio::sync_wait(ctx, body());
    });
    std::vector<int> clients;
    for (int i = 0; i < 6; ++i) {
      int fd = connect_raw(p, 4096, 10'000);
      ASSERT_GE(fd, 0);
      ASSERT_TRUE(send_all(fd, get_request(i % 2 == 0 ? "/big" : "/big2")));
      char tmp[1024];
      (void)::recv(fd, tmp, sizeof tmp, 0);  // the send has begun
      clients.push_back(fd);
    }
    stop_now = true;
    loop.join();
    EXPECT_EQ(fds_below(root_), 0) << "the loop ended: every cached file closed";
    for (int fd : clients) {
      std::string rest;
      char tmp[65536];
      ssize_t n;
      bool closed = false;
      for (;;) {
        do n = ::recv(fd, tmp, sizeof tmp, 0);
        while (n < 0 && errno == EINTR);
        if (n <= 0) {
          closed = n == 0 || errno == ECONNRESET;
          break;
        }
      }
      EXPECT_TRUE(closed) << "a connection of a destroyed loop stayed open";
      ::close(fd);
    }
  }
}

// --- Validators and ranges around the interval --------------------------------------

TEST_P(StaticFileCacheAttack, StaleValidatorsGetTheNewVersionAfterTheInterval) {
  routes_.prefix("/nocache/", ringio::http::static_files(root_.string(), {.open_file_cache_entries = 0}));
  serve({.open_file_cache_valid_for = 100ms});
  write_file(root_ / "c.txt", "version one!");
  set_mtime(root_ / "c.txt", timespec{1'700'000'000, 0});
  auto first = get("/c.txt");
  ASSERT_TRUE(first);
  const std::string etag = first->header("ETag"), modified = first->header("Last-Modified");
  ASSERT_FALSE(etag.empty());
  ASSERT_FALSE(modified.empty());
  replace_file(root_ / "c.txt", "version two!");  // same size
  set_mtime(root_ / "c.txt", timespec{1'700'000'010, 0});
  std::this_thread::sleep_for(250ms);
  auto r = get("/c.txt", "If-None-Match: " + etag + "\r\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << "304 for new content on the old ETag";
  EXPECT_EQ(r->body, "version two!");
  r = get("/c.txt", "If-Modified-Since: " + modified + "\r\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << "304 for content modified 10 s later";
  r = get("/c.txt", "Range: bytes=0-6\r\nIf-Range: " + etag + "\r\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << "a range of the new version on the old version's ETag";
  EXPECT_EQ(r->body, "version two!");
  r = get("/c.txt", "Range: bytes=8-\r\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 206);
  EXPECT_EQ(r->body, "two!");
  EXPECT_EQ(get("/c.txt")->header("ETag"), get("/nocache/c.txt")->header("ETag"));
}

// Written in place with the same size and a modification time in the same second: the
// nanoseconds differ, so after the interval the validators must be the new ones.
TEST_P(StaticFileCacheAttack, AChangeInPlaceWithinTheSameSecondGetsNewValidatorsAfterTheInterval) {
  routes_.prefix("/nocache/", ringio::http::static_files(root_.string(), {.open_file_cache_entries = 0}));
  serve({.open_file_cache_valid_for = 100ms});
  write_file(root_ / "t.txt", "aaaa");
  set_mtime(root_ / "t.txt", timespec{1'700'000'000, 100'000'000});
  auto first = get("/t.txt");
  ASSERT_TRUE(first);
  const std::string etag = first->header("ETag");
  overwrite_in_place(root_ / "t.txt", "bbbb");
  set_mtime(root_ / "t.txt", timespec{1'700'000'000, 600'000'000});
  std::this_thread::sleep_for(250ms);
  auto uncached = get("/nocache/t.txt");
  ASSERT_TRUE(uncached);
  auto r = get("/t.txt");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "bbbb");
  EXPECT_EQ(r->header("ETag"), uncached->header("ETag")) << "the cache kept validators the file no longer has";
  if (uncached->header("ETag") != etag) {
    r = get("/t.txt", "If-None-Match: " + etag + "\r\n");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << "304 on the old ETag for content changed in place";
  } else {
    std::printf("the ETag does not tell modification times within one second apart\n");
  }
}

// Replaced by rename with the same size and the same modification time: only the inode
// tells, and after the interval the new file must be served.
TEST_P(StaticFileCacheAttack, AReplacementWithTheSameSizeAndTimeIsSeenByItsInode) {
  routes_.prefix("/nocache/", ringio::http::static_files(root_.string(), {.open_file_cache_entries = 0}));
  serve({.open_file_cache_valid_for = 100ms});
  write_file(root_ / "i.txt", "old!");
  const timespec t = mtime_of(root_ / "i.txt");
  EXPECT_EQ(body_of("/i.txt"), "old!");
  const std::string etag = get("/i.txt")->header("ETag");
  replace_file(root_ / "i.txt", "new!");
  set_mtime(root_ / "i.txt", t);
  std::this_thread::sleep_for(250ms);
  EXPECT_EQ(body_of("/i.txt"), "new!");
  // Whether the old ETag still matches is the validator's own design: the cached and
  // the uncached answers must agree.
  auto cached = get("/i.txt", "If-None-Match: " + etag + "\r\n");
  auto uncached = get("/nocache/i.txt", "If-None-Match: " + etag + "\r\n");
  ASSERT_TRUE(cached && uncached);
  EXPECT_EQ(cached->status, uncached->status);
  std::printf("the old ETag on the new file (same size and time, other inode): %d\n", cached->status);
}

TEST_P(StaticFileCacheAttack, HeadOnCachedEntriesKeepsTheConnectionInStep) {
  const std::string big = pattern(300'000);
  write_file(root_ / "big", big);
  serve({.open_file_cache_valid_for = std::chrono::hours(1)});
  http_client c(port());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(c.send("HEAD /big HTTP/1.1\r\nHost: t\r\n\r\n"));
    auto h = c.read_reply(true);
    ASSERT_TRUE(h);
    EXPECT_EQ(h->status, 200);
    EXPECT_EQ(h->header("Content-Length"), std::to_string(big.size()));
    ASSERT_TRUE(c.send("HEAD /a.txt HTTP/1.1\r\nHost: t\r\n\r\nGET /big HTTP/1.1\r\nHost: t\r\n\r\n"));
    h = c.read_reply(true);
    ASSERT_TRUE(h);
    EXPECT_EQ(h->header("Content-Length"), "5");
    auto r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_TRUE(r->body == big);
  }
  // HEAD of a file that shrank within the interval: the cached length, and no body.
  ::truncate((root_ / "big").c_str(), 10);
  ASSERT_TRUE(c.send("HEAD /big HTTP/1.1\r\nHost: t\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto h = c.read_reply(true);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  auto r = c.read_reply();
  ASSERT_TRUE(r) << "HEAD sent bytes of a body";
  EXPECT_EQ(r->body, "first");
}

// --- Extreme settings ----------------------------------------------------------------

TEST_P(StaticFileCacheAttack, HugeIntervalsTrustTheEntryAndOverflowNothing) {
  routes_.prefix("/max/", ringio::http::static_files(root_.string(),
                                                     {.open_file_cache_valid_for = std::chrono::milliseconds::max()}));
  routes_.prefix("/years/", ringio::http::static_files(
                                root_.string(), {.open_file_cache_valid_for = std::chrono::hours(24 * 365 * 1000)}));
  start_server(routes_);
  EXPECT_EQ(body_of("/max/a.txt"), "first");
  EXPECT_EQ(body_of("/years/a.txt"), "first");
  replace_file(root_ / "a.txt", "second");
  EXPECT_EQ(body_of("/max/a.txt"), "first") << "an interval of milliseconds::max() did not trust the entry";
  EXPECT_EQ(body_of("/years/a.txt"), "first");
}

TEST_P(StaticFileCacheAttack, ZeroIntervalSeesChangesInPlaceAtOnce) {
  serve({.open_file_cache_valid_for = 0ms});
  write_file(root_ / "z.txt", "one");
  EXPECT_EQ(body_of("/z.txt"), "one");
  write_file(root_ / "z.txt", "three");
  auto r = get("/z.txt");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "three");
  EXPECT_EQ(r->header("Content-Length"), "5");
  fs::remove(root_ / "z.txt");
  EXPECT_EQ(status_of("/z.txt"), 404);
}

TEST_P(StaticFileCacheAttack, OneEntryWithManyFilesAndConcurrentClients) {
  constexpr int files = 40;
  for (int i = 0; i < files; ++i)
    write_file(root_ / ("f" + std::to_string(i)), pattern(static_cast<std::size_t>(1000 + i * 1500), 'a' + i % 20));
  serve({.open_file_cache_entries = 1});
  std::atomic<int> bad{0}, whole{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&, c] {
      std::mt19937 rng(static_cast<unsigned>(c) + 7);
      http_client client(port());
      for (int k = 0; k < 150; ++k) {
        const int i = static_cast<int>(rng() % files);
        auto r = client.exchange(get_request("/f" + std::to_string(i)));
        if (!r || r->status != 200 || r->body != pattern(static_cast<std::size_t>(1000 + i * 1500), 'a' + i % 20)) {
          ++bad;
          return;
        }
        ++whole;
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(whole.load(), 600);
  std::this_thread::sleep_for(100ms);
  EXPECT_LE(fds_below(root_), 1);
  stop_server();
  EXPECT_EQ(fds_below(root_), 0);
}

// --- The staleness bound under steady traffic ----------------------------------------

// A client asks for the file every few milliseconds; the file is replaced by rename.
// Hits must not extend the trust: from 'interval' after the replacement (plus a
// margin for the request in flight), every reply is the new version.
TEST_P(StaticFileCacheAttack, HitsDoNotExtendTheIntervalUnderSteadyTraffic) {
  serve({.open_file_cache_valid_for = 300ms});
  write_file(root_ / "s.txt", "old");
  http_client c(port());
  auto r = c.exchange(get_request("/s.txt"));
  ASSERT_TRUE(r);
  ASSERT_EQ(r->body, "old");
  std::this_thread::sleep_for(150ms);  // the entry is checked, then trusted for 300 ms
  replace_file(root_ / "s.txt", "new");
  const auto replaced = std::chrono::steady_clock::now();
  int old_after_bound = 0;
  std::string when;
  while (std::chrono::steady_clock::now() - replaced < 1500ms) {
    const auto sent = std::chrono::steady_clock::now();
    r = c.exchange(get_request("/s.txt"));
    ASSERT_TRUE(r);
    if (r->body == "old" && sent - replaced > 350ms) {
      if (old_after_bound++ == 0)
        when = std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(sent - replaced).count());
    }
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(old_after_bound, 0) << "the replaced version still served " << when
                                << " ms after the replacement, with an interval of 300 ms";
}

// Concurrent keep-alive clients on one loop, a path checked on every request (and
// every millisecond), a one-entry cache alternating between files, and renames racing
// it all: every reply whole and of one version.
TEST_P(StaticFileCacheAttack, ConcurrentRevalidationsOfOneEntryWithEvictionAndRenames) {
  for (auto valid : {0ms, 1ms}) {
    SCOPED_TRACE(valid.count());
    routes_ = ringio::http::router();
    const std::string a(3000, 'a'), b(40'000, 'b');
    for (int f = 0; f < 3; ++f) write_file(root_ / ("r" + std::to_string(f)), a);
    serve({.open_file_cache_entries = 1, .open_file_cache_valid_for = valid});
    std::atomic<bool> done{false};
    std::thread writer([&] {
      for (int i = 0; !done; ++i) {
        replace_file(root_ / ("r" + std::to_string(i % 3)), i % 2 == 0 ? b : a);
        std::this_thread::sleep_for(100us);
      }
    });
    std::atomic<int> bad{0}, whole{0};
    std::vector<std::thread> clients;
    for (int c = 0; c < 8; ++c) {
      clients.emplace_back([&, c] {
        auto client = std::make_unique<http_client>(port());
        const auto end = std::chrono::steady_clock::now() + 1s;
        for (int i = 0; std::chrono::steady_clock::now() < end; ++i) {
          auto r = client->exchange(get_request("/r" + std::to_string((i + c) % 3)));
          if (!r) {
            ++bad;
            client = std::make_unique<http_client>(port());
            continue;
          }
          if (r->status != 200 || (r->body != a && r->body != b)) ++bad;
          ++whole;
        }
      });
    }
    for (auto& t : clients) t.join();
    done = true;
    writer.join();
    EXPECT_EQ(bad.load(), 0);
    EXPECT_GT(whole.load(), 0);
    stop_server();
    EXPECT_EQ(fds_below(root_), 0);
  }
}

// --- The cap, directories ----------------------------------------------------------

TEST_P(StaticFileCacheAttack, TheCacheNeverHoldsMoreThanAnEighthOfTheDescriptorLimit) {
  nofile_guard guard;
  rlimit lowered = guard.saved;
  const int high = highest_fd();
  lowered.rlim_cur = static_cast<rlim_t>(std::max(400, high + 200));
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &lowered), 0);
  const int cap = static_cast<int>(lowered.rlim_cur / 8);
  for (int i = 0; i < cap + 30; ++i) write_file(root_ / ("f" + std::to_string(i)), "x");
  serve({});
  http_client c(port());
  for (int i = 0; i < cap + 30; ++i) {
    auto r = c.exchange(get_request("/f" + std::to_string(i)));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
  }
  EXPECT_LE(fds_below(root_), cap) << "a limit of " << lowered.rlim_cur << " descriptors";
  ::setrlimit(RLIMIT_NOFILE, &guard.saved);
  stop_server();
}

TEST_P(StaticFileCacheAttack, DirectoriesAndMissesKeepNothingOpen) {
  fs::create_directories(root_ / "empty");
  serve({});
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(status_of("/sub"), 301);
    EXPECT_EQ(status_of("/empty/"), 404);
    EXPECT_EQ(status_of("/missing" + std::to_string(i)), 404);
    EXPECT_EQ(status_of("/a.txt/"), 404);
  }
  EXPECT_EQ(fds_below(root_), 0) << "directories and misses are not cached";
  EXPECT_EQ(body_of("/sub/"), "<p>sub</p>");
  EXPECT_EQ(fds_below(root_), 1);
}

// --- Handlers that end while their loop lives on -------------------------------------

// One loop serves a server whose handler has root A, stops it, destroys the server and
// its handler, then serves a new one whose handler has root B: the new handler serves
// B's files, never the cached entries of A's.
TEST_P(StaticFileCacheAttack, ANewHandlerOnALivingLoopNeverServesADestroyedHandlersEntries) {
  const fs::path other = base_ / "other";
  fs::create_directories(other / "sub");
  write_file(other / "a.txt", "B's a");
  write_file(other / "sub" / "index.html", "B's sub");
  const fs::path roots[2] = {root_, other};
  constexpr int rounds = 6;
  std::atomic<std::uint16_t> port_now{0};
  std::stop_source stops[rounds];
  std::atomic<int> serving{-1};
  std::thread loop([&, backend = GetParam()] {
    ringio::io_context ctx(ringio::io_context_options{.backend = backend, .quiet = true});
    auto body = [&]() -> ringio::task<void> {
      for (int round = 0; round < rounds; ++round) {
        auto routes = std::make_unique<ringio::http::router>();
        routes->prefix("/", ringio::http::static_files(roots[round % 2].string(),
                                                       {.open_file_cache_valid_for = std::chrono::hours(1)}));
        auto srv = std::make_unique<ringio::http::server>(*routes,
                                                          ringio::http::server_options{.log = [](std::string_view) {}});
        auto listener = listen_loopback();  // serve() closes its listener when it ends
        port_now = address_of(listener).port();
        serving = round;
        co_await srv->serve(listener, stops[round].get_token());
        srv.reset();
        routes.reset();
      }
    };
    ringio::sync_wait(ctx, body());
  });
  for (int round = 0; round < rounds; ++round) {
    while (serving.load() != round) std::this_thread::sleep_for(1ms);
    const std::string want_a = round % 2 == 0 ? "first" : "B's a";
    const std::string want_sub = round % 2 == 0 ? "<p>sub</p>" : "B's sub";
    const std::uint16_t p = port_now.load();
    for (int i = 0; i < 2; ++i) {
      http_client c(p);
      auto r = c.exchange(get_request("/a.txt"));
      EXPECT_TRUE(r && r->body == want_a) << "round " << round << ": " << (r ? r->body : "(no reply)");
      r = c.exchange(get_request("/sub/"));
      EXPECT_TRUE(r && r->body == want_sub) << "round " << round << ": " << (r ? r->body : "(no reply)");
    }
    stops[round].request_stop();
  }
  loop.join();
  EXPECT_EQ(fds_below(root_), 0);
  EXPECT_EQ(fds_below(other), 0);
}

// --- Responses held by a handler that wraps static_files --------------------------

// A handler awaits static_files, then something else, then returns its response;
// meanwhile another request through the same handler evicts (one entry) or replaces
// (checked on every request) the entry the response came from. The response's fields
// must stay what they were, whatever its body: a whole file, none (HEAD), or none (304).
TEST_P(StaticFileCacheAttack, AResponseHeldAcrossAnAwaitKeepsItsFieldsWhenItsEntryGoes) {
  write_file(root_ / "b.txt", "bbbbb");
  std::atomic<int> changed{0};
  std::string changed_example;
  std::mutex mu;
  for (auto valid : {std::chrono::milliseconds::zero(), std::chrono::milliseconds(3'600'000)}) {
    ringio::http::static_files files(root_.string(),
                                     {.open_file_cache_entries = 1, .open_file_cache_valid_for = valid});
    routes_.prefix(
        valid.count() == 0 ? "/zero/" : "/one/",
        [files, &changed, &changed_example, &mu](ringio::http::request& r) -> ringio::task<ringio::http::response> {
          ringio::http::response resp = co_await files(r);
          const std::string before(resp.extra_headers());
          (void)co_await ringio::sleep_for(60ms);
          if (std::string(resp.extra_headers()) != before) {
            ++changed;
            std::lock_guard lock(mu);
            changed_example = before + " became " + std::string(resp.extra_headers());
          }
          co_return resp;
        });
  }
  start_server(routes_);
  const std::string etag = get("/one/a.txt")->header("ETag");
  ASSERT_FALSE(etag.empty());
  int bad_replies = 0;
  for (const char* prefix : {"/one/", "/zero/"}) {
    for (int kind = 0; kind < 3; ++kind) {  // GET, HEAD, If-None-Match (304)
      for (int i = 0; i < 5; ++i) {
        std::optional<http_reply> held;
        std::thread x([&] {
          http_client c(port());
          const std::string path = std::string(prefix) + "a.txt";
          if (kind == 1) {
            if (c.send("HEAD " + path + " HTTP/1.1\r\nHost: t\r\n\r\n")) held = c.read_reply(true);
          } else {
            held = c.exchange(get_request(path, kind == 2 ? "If-None-Match: " + etag + "\r\n" : ""));
          }
        });
        std::this_thread::sleep_for(15ms);
        if (std::string(prefix) == "/zero/") {  // the path changes: the entry is dropped
          replace_file(root_ / "a.txt", i % 2 == 0 ? "FIRST" : "first");
        }
        EXPECT_EQ(body_of(std::string(prefix) + "b.txt"), "bbbbb");  // evicts a.txt's entry
        x.join();
        if (!held || held->header("ETag").size() != etag.size() || held->header("Last-Modified").size() != 29) {
          ++bad_replies;
        }
      }
    }
  }
  EXPECT_EQ(bad_replies, 0) << "replies without whole validators";
  EXPECT_EQ(changed.load(), 0) << "a held response's fields changed under it: " << changed_example;
}

// --- Many handlers sharing the descriptors ------------------------------------------

// Sixteen handlers, each allowed an eighth of the descriptor limit, can together hold
// twice the limit: when an open fails for want of descriptors, cached files (of the
// loop, whichever handler holds them) are closed and the request still served; a new
// connection (another process connects) is still accepted.
TEST_P(StaticFileCacheAttack, ManyHandlersTogetherExhaustingDescriptorsStillAnswer) {
  nofile_guard guard;
  constexpr int handlers = 16, files = 60;
  for (int i = 0; i < files; ++i) write_file(root_ / ("f" + std::to_string(i)), "file " + std::to_string(i));
  for (int h = 0; h < handlers; ++h)
    routes_.prefix("/h" + std::to_string(h) + "/", ringio::http::static_files(root_.string()));
  std::vector<std::unique_ptr<http_client>> clients;
  int pipefd[2];  // made now: none may be left later
  ASSERT_EQ(::pipe2(pipefd, O_CLOEXEC), 0);
  rlimit lowered = guard.saved;
  const int high = highest_fd();
  lowered.rlim_cur = static_cast<rlim_t>(std::max(400, high + 120));
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &lowered), 0);  // before the handlers' first use: cap = limit / 8
  start_server(routes_);
  for (int i = 0; i < 2; ++i) clients.push_back(std::make_unique<http_client>(port()));
  int not_ok = 0;
  std::string first_failure;
  std::vector<int> failures_by_handler(handlers);
  for (int h = 0; h < handlers; ++h) {
    for (int i = 0; i < files; ++i) {
      const std::string path = "/h" + std::to_string(h) + "/f" + std::to_string(i);
      auto r = clients[static_cast<std::size_t>(i % 2)]->exchange(get_request(path));
      if (!r || r->status != 200 || r->body != "file " + std::to_string(i)) {
        ++failures_by_handler[static_cast<std::size_t>(h)];
        if (not_ok++ == 0) first_failure = path + ": " + (r ? std::to_string(r->status) : std::string("no reply"));
        if (!r) clients[static_cast<std::size_t>(i % 2)] = std::make_unique<http_client>(port());
      }
    }
  }
  std::string by_handler;
  for (int n : failures_by_handler) by_handler += std::to_string(n) + " ";
  EXPECT_EQ(not_ok, 0) << "requests not answered 200 while descriptors ran out; first: " << first_failure
                       << "; failures by handler: " << by_handler;
  errno = 0;
  const int probe = ::dup(0);
  EXPECT_GE(probe, 0) << "the process has no descriptor left: " << std::strerror(errno);
  if (probe >= 0) ::close(probe);
  const std::uint16_t p = port();
  pid_t child = ::fork();
  if (child == 0) {
    ::setrlimit(RLIMIT_NOFILE, &guard.saved);
    char out = 'n';
    int fd = connect_raw(p, 0, 5000);
    if (fd >= 0 && send_all(fd, "GET /h0/f0 HTTP/1.1\r\nHost: t\r\n\r\n")) {
      char b[64];
      ssize_t n = ::recv(fd, b, sizeof b, MSG_WAITALL);
      out = n >= 12 && std::memcmp(b, "HTTP/1.1 200", 12) == 0 ? 'y' : n >= 12 ? b[9] : 't';
    }
    (void)::write(pipefd[1], &out, 1);
    ::_exit(0);
  }
  ::close(pipefd[1]);
  char verdict = '?';
  (void)::read(pipefd[0], &verdict, 1);
  ::close(pipefd[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_EQ(verdict, 'y') << "a new connection while the caches hold the descriptors ('t': no reply within 5 s)";
  ::setrlimit(RLIMIT_NOFILE, &guard.saved);
  std::printf("%d files of the root open under a limit of %d descriptors\n", fds_below(root_),
              static_cast<int>(lowered.rlim_cur));
  clients.clear();
  stop_server();
  EXPECT_EQ(fds_below(root_), 0);
}

TEST_P(StaticFileCacheAttack, AHugeEntryCountIsCappedNotAllocated) {
  routes_.prefix("/max/", ringio::http::static_files(
                              root_.string(), {.open_file_cache_entries = std::numeric_limits<std::size_t>::max()}));
  routes_.prefix("/big/", ringio::http::static_files(root_.string(), {.open_file_cache_entries = 1'000'000'000}));
  start_server(routes_);
  EXPECT_EQ(body_of("/max/a.txt"), "first");
  EXPECT_EQ(body_of("/big/a.txt"), "first");
  EXPECT_EQ(body_of("/max/sub/"), "<p>sub</p>");
}

// The loop's serving task is stopped (every connection cancelled) while clients keep
// requesting small files checked on every request, through a two-entry cache: pending
// path checks, opens and sends end with the loop; nothing stays open.
TEST_P(StaticFileCacheAttack, AHardStopDuringPathChecksAndOpens) {
  for (int i = 0; i < 5; ++i) write_file(root_ / ("f" + std::to_string(i)), std::string(2000 + i * 9000, 'x'));
  ringio::http::router routes;
  routes.prefix("/", ringio::http::static_files(root_.string(),
                                                {.open_file_cache_entries = 2, .open_file_cache_valid_for = 0ms}));
  for (int round = 0; round < 3; ++round) {
    ringio::http::server srv(routes, {.log = [](std::string_view) {}});
    auto listener = listen_loopback();
    const std::uint16_t p = address_of(listener).port();
    std::atomic<bool> stop_now{false}, clients_done{false};
    std::thread loop([&, backend = GetParam()] {
      ringio::io_context ctx(ringio::io_context_options{.backend = backend, .quiet = true});
      auto body = [&]() -> ringio::task<void> {
        ringio::scope sc;
        sc.spawn(srv.serve(listener));
        while (!stop_now.load()) (void)co_await ringio::sleep_for(1ms);
        sc.request_stop();
        co_await sc.join();
      };
      ringio::sync_wait(ctx, body());
    });
    std::vector<std::thread> clients;
    std::atomic<int> replies{0};
    for (int c = 0; c < 6; ++c) {
      clients.emplace_back([&, c] {
        for (int i = 0; !clients_done; ++i) {
          http_client client(p, 3000);
          if (!client.connected()) break;
          for (int k = 0; k < 20 && !clients_done; ++k) {
            auto r = client.exchange(get_request("/f" + std::to_string((i + k + c) % 5)));
            if (!r) break;
            ++replies;
          }
        }
      });
    }
    std::this_thread::sleep_for(300ms + std::chrono::milliseconds(round * 70));
    stop_now = true;
    loop.join();
    clients_done = true;
    for (auto& t : clients) t.join();
    EXPECT_GT(replies.load(), 0);
    EXPECT_EQ(fds_below(root_), 0) << "round " << round;
  }
}

// Ranges (one, and several as multipart) of a cached file that shrank in place within
// the interval: the bytes promised past the new end cannot be read, so each reply is
// whole or ends its connection; none leaves the connection open with a short body.
TEST_P(StaticFileCacheAttack, RangesOfACachedFileThatShrankAreWholeOrEndTheConnection) {
  for (bool sendfile : {true, false}) {
    SCOPED_TRACE(sendfile ? "sendfile" : "read through the loop");
    routes_ = ringio::http::router();
    serve({.open_file_cache_valid_for = std::chrono::hours(1)}, {.sendfile = sendfile});
    struct probe {
      std::size_t size, shrunk;
      const char* range;
    };
    const probe probes[] = {
        {10'000, 100, "bytes=5000-5099"},
        {10'000, 100, "bytes=0-9,5000-5009,9000-9009"},
        {10'000, 5005, "bytes=0-9,5000-5009,9000-9009"},
        {200'000, 50'000, "bytes=100000-199999"},
        {200'000, 50'000, "bytes=0-9,40000-59999,150000-150009"},
        {200'000, 120'000, "bytes=100000-"},
    };
    int n = 0;
    for (const auto& pr : probes) {
      SCOPED_TRACE(std::string(pr.range) + " of " + std::to_string(pr.size) + " shrunk to " +
                   std::to_string(pr.shrunk));
      const std::string name = "r" + std::to_string(n++) + (sendfile ? "s" : "l");
      const std::string data = pattern(pr.size);
      write_file(root_ / name, data);
      int fd = connect_raw(port(), 0, 3000);
      ASSERT_GE(fd, 0);
      std::string buf;
      ASSERT_TRUE(send_all(fd, get_request("/" + name)));
      auto r = read_raw(fd, buf);
      ASSERT_EQ(r.body.size(), pr.size);
      ASSERT_EQ(::truncate((root_ / name).c_str(), static_cast<off_t>(pr.shrunk)), 0);
      ASSERT_TRUE(
          send_all(fd, get_request("/" + name, std::string("Range: ") + pr.range + "\r\n") + get_request("/a.txt")));
      r = read_raw(fd, buf);
      if (r.status == 0) {  // the short read came before the head: the connection ends
        EXPECT_TRUE(r.ended_by_close);
      } else {
        EXPECT_EQ(r.status, 206);
      }
      EXPECT_FALSE(r.timed_out) << "a reply of " << r.body.size() << " of " << r.content_length
                                << " bytes on a connection left open";
      if (!r.timed_out && !r.ended_by_close) {
        auto next = read_raw(fd, buf);
        EXPECT_EQ(next.status, 200) << "the next reply on the connection: " << next.head.substr(0, 40);
        EXPECT_EQ(next.body, "first");
      }
      ::close(fd);
    }
    stop_server();
  }
}

// A cached path that comes to name a symlink loop or a Unix socket: answered with an
// error at once after the interval, and other requests go on.
TEST_P(StaticFileCacheAttack, ACachedPathThatBecomesASymlinkLoopOrASocketIsAnswered) {
  serve({.open_file_cache_valid_for = 100ms});
  write_file(root_ / "loop", "regular");
  write_file(root_ / "sock", "regular");
  EXPECT_EQ(body_of("/loop"), "regular");
  EXPECT_EQ(body_of("/sock"), "regular");
  fs::create_symlink("loop2", root_ / "loop.tmp");
  fs::create_symlink("loop", root_ / "loop2");
  fs::rename(root_ / "loop.tmp", root_ / "loop");
  int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(s, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  const std::string sock_tmp = (root_ / "sock.tmp").string();
  ASSERT_LT(sock_tmp.size(), sizeof a.sun_path);
  std::memcpy(a.sun_path, sock_tmp.c_str(), sock_tmp.size() + 1);
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << std::strerror(errno);
  ASSERT_EQ(::listen(s, 4), 0);
  fs::rename(root_ / "sock.tmp", root_ / "sock");
  std::this_thread::sleep_for(250ms);
  for (const char* path : {"/loop", "/sock"}) {
    int fd = connect_raw(port(), 0, 5000);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(send_all(fd, get_request(path)));
    std::string buf;
    auto r = read_raw(fd, buf);
    EXPECT_FALSE(r.timed_out) << path;
    EXPECT_GE(r.status, 400) << path << ": " << r.head;
    ::close(fd);
  }
  EXPECT_EQ(body_of("/a.txt"), "first");
  ::close(s);
}

// Least recently used first: with three entries, a file requested again stays open
// when a fourth comes.
TEST_P(StaticFileCacheAttack, EvictionClosesTheLeastRecentlyUsedFile) {
  for (int i = 0; i < 4; ++i) write_file(root_ / ("f" + std::to_string(i)), "file " + std::to_string(i));
  serve({.open_file_cache_entries = 3});
  for (int i : {0, 1, 2, 0, 3}) EXPECT_EQ(body_of("/f" + std::to_string(i)), "file " + std::to_string(i));
  auto open_names = [&] {
    std::string names;
    for (int i = 0; i < 4; ++i) {
      const std::string target = (root_ / ("f" + std::to_string(i))).string();
      DIR* d = ::opendir("/proc/self/fd");
      bool found = false;
      while (dirent* e = d ? ::readdir(d) : nullptr) {
        char buf[4096];
        ssize_t len = ::readlink((std::string("/proc/self/fd/") + e->d_name).c_str(), buf, sizeof buf - 1);
        if (len > 0 && std::string_view(buf, static_cast<std::size_t>(len)) == target) found = true;
      }
      if (d) ::closedir(d);
      if (found) names += "f" + std::to_string(i) + " ";
    }
    return names;
  };
  EXPECT_EQ(open_names(), "f0 f2 f3 ");
}

}  // namespace

RINGIO_ALL_BACKENDS(StaticFileCacheAttack);
