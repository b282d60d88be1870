// SPDX-License-Identifier: Apache-2.0
// The open-file cache of static_files over real sockets and real files, on every
// backend: hits serve the same bytes; a file changed in place, replaced by rename or
// deleted is seen once the validity interval has passed (and not before, with a long
// one); the cache off sees every change at once; eviction keeps at most the configured
// number of files open; a stopped server has closed them all; and a client racing
// replacements of the file always gets a whole body of the length announced.
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "http/http_client.hpp"
#include "http/server_fixture.hpp"
#include "ringio/http/static_files.hpp"
#include "support/file_edits.hpp"

using namespace ringio_test;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

class HttpStaticFileCache : public http_server_test {
 protected:
  void SetUp() override {
    http_server_test::SetUp();
    if (IsSkipped()) return;
    char tmpl[] = "/tmp/ringio-fcache-XXXXXX";
    base_ = mkdtemp(tmpl);
    root_ = base_ / "root";
    fs::create_directories(root_ / "sub");
    write_file(root_ / "a.txt", "first");
    write_file(root_ / "sub" / "index.html", "<p>sub</p>");
  }
  void TearDown() override {
    http_server_test::TearDown();
    if (!base_.empty()) fs::remove_all(base_);
  }
  void serve(ringio::http::static_files_options opts) {
    routes_.prefix("/", ringio::http::static_files(root_.string(), std::move(opts)));
    start_server(routes_);
  }
  std::optional<http_reply> get(const std::string& path) {
    http_client c(port());
    return c.exchange(get_request(path));
  }
  std::string body_of(const std::string& path) {
    auto r = get(path);
    if (!r) return "(no reply)";
    return r->status == 200 ? r->body : "(status " + std::to_string(r->status) + ")";
  }

  fs::path base_, root_;
  ringio::http::router routes_;
};

TEST_P(HttpStaticFileCache, HitsServeTheSameBytesAndValidators) {
  serve({});
  auto first = get("/a.txt");
  ASSERT_TRUE(first);
  EXPECT_EQ(first->body, "first");
  for (int i = 0; i < 5; ++i) {
    auto r = get("/a.txt");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "first");
    EXPECT_EQ(r->header("ETag"), first->header("ETag"));
    EXPECT_EQ(r->header("Last-Modified"), first->header("Last-Modified"));
    EXPECT_EQ(r->header("Content-Type"), "text/plain; charset=utf-8");
  }
  EXPECT_EQ(body_of("/sub/"), "<p>sub</p>");
  EXPECT_EQ(body_of("/sub/"), "<p>sub</p>");
  EXPECT_EQ(body_of("/sub/index.html"), "<p>sub</p>");
  // Conditional and range requests on a cached file.
  http_client c(port());
  auto r = c.exchange(get_request("/a.txt", "If-None-Match: " + first->header("ETag") + "\r\n"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 304);
  r = c.exchange(get_request("/a.txt", "Range: bytes=1-3\r\n"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 206);
  EXPECT_EQ(r->body, "irs");
  r = c.exchange(get_request("/a.txt", "Range: bytes=0-0,4-4\r\n"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 206);
  EXPECT_NE(r->body.find("f"), std::string::npos);
  EXPECT_EQ(body_of("/a.txt/"), "(status 404)") << "a file is no directory, cached or not";
}

TEST_P(HttpStaticFileCache, AFileReplacedWithinTheIntervalIsStillServedFromTheCache) {
  serve({.open_file_cache_valid_for = std::chrono::hours(1)});
  EXPECT_EQ(body_of("/a.txt"), "first");
  replace_file(root_ / "a.txt", "second");
  EXPECT_EQ(body_of("/a.txt"), "first") << "trusted for an hour: the path is not looked at again";
  fs::remove(root_ / "a.txt");
  EXPECT_EQ(body_of("/a.txt"), "first");
}

TEST_P(HttpStaticFileCache, AFileChangedInPlaceIsSeenAfterTheInterval) {
  serve({.open_file_cache_valid_for = 100ms});
  EXPECT_EQ(body_of("/a.txt"), "first");
  write_file(root_ / "a.txt", "changed in place");  // same inode, new size and mtime
  std::this_thread::sleep_for(150ms);
  EXPECT_EQ(body_of("/a.txt"), "changed in place");
  {  // same size: the modification time tells
    std::fstream f(root_ / "a.txt", std::ios::in | std::ios::out | std::ios::binary);
    f << "CHANGED";
  }
  std::this_thread::sleep_for(150ms);
  EXPECT_EQ(body_of("/a.txt"), "CHANGED in place");
}

TEST_P(HttpStaticFileCache, AFileReplacedByRenameIsSeenAfterTheInterval) {
  serve({.open_file_cache_valid_for = 100ms});
  EXPECT_EQ(body_of("/a.txt"), "first");
  EXPECT_EQ(body_of("/sub/"), "<p>sub</p>");
  replace_file(root_ / "a.txt", "second");
  replace_file(root_ / "sub" / "index.html", "<p>new</p>");
  std::this_thread::sleep_for(150ms);
  EXPECT_EQ(body_of("/a.txt"), "second");
  EXPECT_EQ(body_of("/sub/"), "<p>new</p>");
  EXPECT_EQ(body_of("/a.txt"), "second");
}

TEST_P(HttpStaticFileCache, ADeletedFileIsNotFoundAfterTheInterval) {
  serve({.open_file_cache_valid_for = 100ms});
  EXPECT_EQ(body_of("/a.txt"), "first");
  fs::remove(root_ / "a.txt");
  std::this_thread::sleep_for(150ms);
  EXPECT_EQ(body_of("/a.txt"), "(status 404)");
  write_file(root_ / "a.txt", "back");
  EXPECT_EQ(body_of("/a.txt"), "back") << "a miss is not cached";
}

TEST_P(HttpStaticFileCache, AZeroIntervalChecksThePathOnEveryRequest) {
  serve({.open_file_cache_valid_for = 0ms});
  EXPECT_EQ(body_of("/a.txt"), "first");
  replace_file(root_ / "a.txt", "second");
  EXPECT_EQ(body_of("/a.txt"), "second");
  fs::remove(root_ / "a.txt");
  EXPECT_EQ(body_of("/a.txt"), "(status 404)");
}

TEST_P(HttpStaticFileCache, WithTheCacheOffEveryChangeIsSeenAtOnceAndNoFileStaysOpen) {
  serve({.open_file_cache_entries = 0});
  EXPECT_EQ(body_of("/a.txt"), "first");
  EXPECT_EQ(fds_below(root_), 0);
  replace_file(root_ / "a.txt", "second");
  EXPECT_EQ(body_of("/a.txt"), "second");
  write_file(root_ / "a.txt", "third");
  EXPECT_EQ(body_of("/a.txt"), "third");
  fs::remove(root_ / "a.txt");
  EXPECT_EQ(body_of("/a.txt"), "(status 404)");
  EXPECT_EQ(fds_below(root_), 0);
}

TEST_P(HttpStaticFileCache, EvictionKeepsAtMostTheConfiguredFilesOpen) {
  serve({.open_file_cache_entries = 3});
  for (int i = 0; i < 10; ++i) write_file(root_ / ("f" + std::to_string(i)), "file " + std::to_string(i));
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 10; ++i) {
      const std::string name = "f" + std::to_string(i);
      EXPECT_EQ(body_of("/" + name), "file " + std::to_string(i));
      EXPECT_LE(fds_below(root_), 3);
    }
  }
  EXPECT_EQ(fds_below(root_), 3);
  stop_server();
  EXPECT_EQ(fds_below(root_), 0);
}

TEST_P(HttpStaticFileCache, AStoppedServerHasClosedEveryCachedFile) {
  EXPECT_EQ(fds_below(root_), 0);
  serve({});
  for (int i = 0; i < 20; ++i) write_file(root_ / ("f" + std::to_string(i)), std::string(40'000, 'x'));
  for (int i = 0; i < 20; ++i) EXPECT_EQ(body_of("/f" + std::to_string(i)).size(), 40'000u);
  EXPECT_EQ(body_of("/a.txt"), "first");
  EXPECT_EQ(fds_below(root_), 21);
  stop_server();
  EXPECT_EQ(fds_below(root_), 0);
}

// Replacements (by rename, and in place) race a keep-alive client: every reply that
// arrives whole has the body of one version of the file, of the length announced; a
// short read of a file truncated in place ends the connection instead.
void race_replacements(std::uint16_t port, const fs::path& file, bool in_place, std::size_t small, std::size_t large) {
  const std::string a(small, 'a'), b(large, 'b');
  write_file(file, a);
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 0; !done.load(); ++i) {
      if (in_place) {
        write_file(file, i % 2 == 0 ? b : a);
      } else {
        replace_file(file, i % 2 == 0 ? b : a);
      }
      std::this_thread::sleep_for(200us);
    }
  });
  const std::string request = get_request("/" + file.filename().string());
  int whole = 0, cut = 0;
  auto client = std::make_unique<http_client>(port);
  const auto end = std::chrono::steady_clock::now() + 1s;
  while (std::chrono::steady_clock::now() < end) {
    auto r = client->exchange(request);
    if (!r) {
      // Only a closed connection may end a reply early: a body shorter than its
      // Content-Length on a connection left open would have the client wait instead.
      char c;
      ssize_t n;
      do n = ::recv(client->fd(), &c, 1, MSG_DONTWAIT);
      while (n < 0 && errno == EINTR);
      ASSERT_TRUE(n == 0 || (n < 0 && errno == ECONNRESET)) << "a reply came short on a connection left open";
      ++cut;
      client = std::make_unique<http_client>(port);
      continue;
    }
    ++whole;
    ASSERT_EQ(r->status, 200);
    ASSERT_EQ(r->header("Content-Length"), std::to_string(r->body.size()));
    if (in_place) {  // bytes of either version in any mix (a write racing the read), nothing else
      ASSERT_EQ(r->body.find_first_not_of("ab"), std::string::npos) << "bytes of no version of the file";
    } else {
      ASSERT_TRUE(r->body == a || r->body == b) << "a body of " << r->body.size() << " bytes, no version of the file";
    }
  }
  done = true;
  writer.join();
  EXPECT_GT(whole, 0);
  if (!in_place) {
    EXPECT_EQ(cut, 0) << "a file replaced by rename stays whole for the descriptor that has it open";
  }
  std::printf("%d whole replies, %d connections ended by a short body\n", whole, cut);
}

TEST_P(HttpStaticFileCache, RequestsRacingReplacementsByRenameGetWholeBodies) {
  serve({.open_file_cache_valid_for = 0ms});
  race_replacements(port(), root_ / "race.bin", false, 3000, 7000);
  race_replacements(port(), root_ / "race-big.bin", false, 20'000, 70'000);  // sendfile
}

TEST_P(HttpStaticFileCache, RequestsRacingChangesInPlaceNeverGetAWrongLength) {
  serve({.open_file_cache_valid_for = 1ms});
  race_replacements(port(), root_ / "race.bin", true, 3000, 7000);
  race_replacements(port(), root_ / "race-big.bin", true, 20'000, 70'000);  // sendfile
}

}  // namespace

RINGIO_ALL_BACKENDS(HttpStaticFileCache);
