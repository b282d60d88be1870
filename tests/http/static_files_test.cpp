// SPDX-License-Identifier: Apache-2.0
// Static files over real sockets, on every backend: content types, index files,
// conditional requests, byte ranges (multipart too), and paths that try to leave the
// root; and the date and Range parsers on their own.
#include "ringio/http/static_files.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include "byte_range.hpp"
#include "http/http_client.hpp"
#include "http/server_fixture.hpp"
#include "http_date.hpp"
#include "loop_resources.hpp"
#include "ringio/io_context.hpp"
#include "support/file_edits.hpp"

using namespace ringio_test;
namespace fs = std::filesystem;

namespace {

// recv(2), again after a signal (the test thread gets io_uring's task-work signals).
ssize_t recv_some(int fd, char* buf, std::size_t n) {
  ssize_t r;
  do r = ::recv(fd, buf, n, 0);
  while (r < 0 && errno == EINTR);
  return r;
}

std::string pattern(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + i / 251) % 26);
  return s;
}

class HttpStaticFiles : public http_server_test {
 protected:
  void SetUp() override {
    http_server_test::SetUp();
    if (IsSkipped()) return;
    char tmpl[] = "/tmp/ringio-static-XXXXXX";
    base_ = mkdtemp(tmpl);
    root_ = base_ / "root";
    fs::create_directories(root_ / "sub");
    fs::create_directories(root_ / "empty");
    write_file(root_ / "index.html", "<h1>home</h1>");
    write_file(root_ / "style.css", "body{}");
    write_file(root_ / "data.bin", pattern(100));
    write_file(root_ / "big.dat", pattern(5 * 1024 * 1024 + 17));
    write_file(root_ / "sub" / "index.html", "<p>sub</p>");
    write_file(base_ / "secret.txt", "top secret");
    fs::create_symlink(base_ / "secret.txt", root_ / "link-out");
    fs::create_symlink("style.css", root_ / "link-in");
    // How many request buffers the server's connections hold right now.
    routes_.get("/lent-states", [](ringio::http::request&) -> ringio::task<ringio::http::response> {
      auto& loop = ringio::io_context::current()->service<ringio::http::detail::loop_resources>();
      co_return ringio::http::response::text(200, std::to_string(loop.lent()));
    });
    routes_.prefix("/", ringio::http::static_files(root_.string()));
    routes_.prefix("/static/", ringio::http::static_files(root_.string()));
    start_server(routes_);
  }
  void TearDown() override {
    http_server_test::TearDown();
    if (!base_.empty()) fs::remove_all(base_);
  }
  std::optional<http_reply> get(const std::string& path, const std::string& extra = {}) {
    http_client c(port());
    return c.exchange(get_request(path, extra));
  }
  int status_of(const std::string& path) {
    auto r = get(path);
    return r ? r->status : -1;
  }

  fs::path base_, root_;
  ringio::http::router routes_;
};

TEST_P(HttpStaticFiles, ServesFilesWithTheirContentType) {
  auto r = get("/style.css");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "body{}");
  EXPECT_EQ(r->header("Content-Type"), "text/css; charset=utf-8");
  EXPECT_EQ(r->header("Accept-Ranges"), "bytes");
  r = get("/data.bin");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->header("Content-Type"), "application/octet-stream");
  EXPECT_EQ(r->body, pattern(100));
  r = get("/static/sub/index.html");  // through the second prefix route
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "<p>sub</p>");
  EXPECT_EQ(status_of("/missing.txt"), 404);
}

TEST_P(HttpStaticFiles, DirectoriesServeTheirIndexAndGetASlash) {
  auto r = get("/");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "<h1>home</h1>");
  EXPECT_EQ(r->header("Content-Type"), "text/html; charset=utf-8");
  r = get("/sub?q=1");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 301);
  EXPECT_EQ(r->header("Location"), "/sub/?q=1");
  r = get("/sub/");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "<p>sub</p>");
  EXPECT_EQ(status_of("/empty/"), 404) << "no directory listings";
  r = get("//sub");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->header("Location"), "/sub/") << "a protocol-relative redirect would leave the site";
}

TEST_P(HttpStaticFiles, AFileNamedAsADirectoryIsNotFound) {
  // A trailing slash (also "/." or an empty last segment) names a directory.
  for (const char* path : {"/style.css/", "/style.css//", "/style.css/.", "/style.css/%2e", "/./style.css/",
                           "//style.css/", "/sub/index.html/", "/static/style.css/", "/link-in/"}) {
    EXPECT_EQ(status_of(path), 404) << path;
  }
  // Empty and "." segments elsewhere are dropped, as for directories ("//sub" above).
  for (const char* path : {"//style.css", "/./style.css", "/sub//index.html"}) EXPECT_EQ(status_of(path), 200) << path;
  EXPECT_EQ(get("/sub/./")->body, "<p>sub</p>");
}

TEST_P(HttpStaticFiles, ValidatorsGive304) {
  auto r = get("/style.css");
  ASSERT_TRUE(r);
  std::string etag = r->header("ETag"), modified = r->header("Last-Modified");
  ASSERT_FALSE(etag.empty());
  ASSERT_EQ(modified.size(), 29u);
  auto nm = get("/style.css", "If-None-Match: \"other\", " + etag + "\r\n");
  ASSERT_TRUE(nm);
  EXPECT_EQ(nm->status, 304);
  EXPECT_TRUE(nm->body.empty());
  EXPECT_EQ(nm->header("ETag"), etag);
  EXPECT_EQ(get("/style.css", "If-None-Match: W/" + etag + "\r\n")->status, 304) << "weak comparison";
  EXPECT_EQ(get("/style.css", "If-Modified-Since: " + modified + "\r\n")->status, 304);
  EXPECT_EQ(get("/style.css", "If-Modified-Since: Sat, 01 Jan 2000 00:00:00 GMT\r\n")->status, 200);
  EXPECT_EQ(get("/style.css", "If-None-Match: \"other\"\r\nIf-Modified-Since: " + modified + "\r\n")->status, 200)
      << "If-None-Match takes precedence";
}

// The same instant in the two obsolete HTTP-date forms (RFC 9110 5.6.7), from an IMF-fixdate.
std::string rfc850_from(const std::string& imf) {
  static const std::pair<std::string, std::string> names[] = {
      {"Sun", "Sunday"},   {"Mon", "Monday"}, {"Tue", "Tuesday"}, {"Wed", "Wednesday"},
      {"Thu", "Thursday"}, {"Fri", "Friday"}, {"Sat", "Saturday"}};
  std::string day;
  for (const auto& [abbr, full] : names)
    if (imf.compare(0, 3, abbr) == 0) day = full;
  return day + ", " + imf.substr(5, 2) + "-" + imf.substr(8, 3) + "-" + imf.substr(14, 2) + " " + imf.substr(17, 8) +
         " GMT";
}
std::string asctime_from(const std::string& imf) {
  std::string mday = imf[5] == '0' ? " " + imf.substr(6, 1) : imf.substr(5, 2);
  return imf.substr(0, 3) + " " + imf.substr(8, 3) + " " + mday + " " + imf.substr(17, 8) + " " + imf.substr(12, 4);
}

TEST(HttpDate, ParsesEveryFormAndPlacesTwoDigitYears) {
  using ringio::http::detail::parse_http_date;
  const std::time_t now = 1780272000;  // 2026-06-01 00:00:00 UTC
  const std::time_t t = 784111777;     // 1994-11-06 08:49:37 UTC
  EXPECT_EQ(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT", now), t);
  EXPECT_EQ(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT", now), t);
  EXPECT_EQ(parse_http_date("Sun Nov  6 08:49:37 1994", now), t);
  EXPECT_EQ(parse_http_date("Sun Nov 06 08:49:37 1994", now), t);
  // Up to 50 years ahead of `now` stays in this century; a second later is the last one.
  EXPECT_EQ(parse_http_date("Monday, 01-Jun-76 00:00:00 GMT", now), std::time_t{3358195200});
  EXPECT_EQ(parse_http_date("Tuesday, 01-Jun-76 00:00:01 GMT", now), std::time_t{202435201});
  EXPECT_EQ(parse_http_date("Friday, 01-Jan-99 00:00:00 GMT", now), std::time_t{915148800});
  for (const char* bad :
       {"", "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 6 Nov 1994 08:49:37 GMT",
        "Xyz, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-1994 08:49:37 GMT", "Funday, 06-Nov-94 08:49:37 GMT",
        "Sunday, 06-Foo-94 08:49:37 GMT", "Sun Nov  6 08:49:37 94", "Sun Nov 6 08:49:37 1994 ",
        "Sun Nov  6 08-49-37 1994"})
    EXPECT_FALSE(parse_http_date(bad, now)) << bad;
}

TEST(HttpRange, KeepsSatisfiableRangesInOrderAndRefusesOverlaps) {
  using namespace ringio::http::detail;
  byte_range_list ranges{};
  std::size_t count = 99;
  EXPECT_EQ(parse_range("bytes=90-, 0-0, 500-", 100, ranges, count), range_kind::satisfiable);
  ASSERT_EQ(count, 2u) << "the unsatisfiable 500- is left out";
  EXPECT_EQ(ranges[0].first, 90u);
  EXPECT_EQ(ranges[0].last, 99u);
  EXPECT_EQ(ranges[1].last, 0u);
  EXPECT_EQ(parse_range("bytes=0-9,9-10", 100, ranges, count), range_kind::ignore);
  EXPECT_EQ(count, 0u) << "nothing to send in parts";
  EXPECT_EQ(parse_range("bytes=-1,99-99", 100, ranges, count), range_kind::ignore) << "the same last byte twice";
  EXPECT_EQ(parse_range("bytes=0-9,10-19", 100, ranges, count), range_kind::satisfiable)
      << "adjacent is not overlapping";
  EXPECT_EQ(parse_range("bytes=200-,-0", 100, ranges, count), range_kind::unsatisfiable);
  EXPECT_EQ(parse_range("bytes=,", 100, ranges, count), range_kind::ignore);
}

TEST_P(HttpStaticFiles, ConditionalDatesInEveryHttpDateFormat) {
  std::string modified = get("/style.css")->header("Last-Modified");
  ASSERT_EQ(modified.size(), 29u);
  for (const std::string& same : {modified, rfc850_from(modified), asctime_from(modified)}) {
    SCOPED_TRACE(same);
    EXPECT_EQ(get("/style.css", "If-Modified-Since: " + same + "\r\n")->status, 304);
    EXPECT_EQ(get("/style.css", "If-Unmodified-Since: " + same + "\r\n")->status, 200);
  }
  // A two-digit year more than 50 years ahead is in the past century: 99 is 1999, 70 is 2070.
  for (const char* past :
       {"Fri, 01 Jan 1999 00:00:00 GMT", "Friday, 01-Jan-99 00:00:00 GMT", "Fri Jan  1 00:00:00 1999"}) {
    SCOPED_TRACE(past);
    EXPECT_EQ(get("/style.css", std::string("If-Modified-Since: ") + past + "\r\n")->status, 200);
    EXPECT_EQ(get("/style.css", std::string("If-Unmodified-Since: ") + past + "\r\n")->status, 412);
  }
  EXPECT_EQ(get("/style.css", "If-Unmodified-Since: Wednesday, 01-Jan-70 00:00:00 GMT\r\n")->status, 200);
  EXPECT_EQ(get("/style.css", "If-Modified-Since: Wednesday, 01-Jan-70 00:00:00 GMT\r\n")->status, 304);
  EXPECT_EQ(get("/style.css", "If-Unmodified-Since: yesterday\r\n")->status, 200) << "an invalid date is ignored";
}

TEST_P(HttpStaticFiles, IfMatchAndItsPrecedence) {
  auto r = get("/style.css");
  std::string etag = r->header("ETag"), modified = r->header("Last-Modified");
  EXPECT_EQ(get("/style.css", "If-Match: \"other\"\r\n")->status, 412);
  EXPECT_EQ(get("/style.css", "If-Match: \"other\", " + etag + "\r\n")->status, 200);
  EXPECT_EQ(get("/style.css", "If-Match: *\r\n")->status, 200);
  EXPECT_EQ(get("/style.css", "If-Match: W/" + etag + "\r\n")->status, 412) << "If-Match compares strongly";
  EXPECT_EQ(
      get("/style.css", "If-Match: " + etag + "\r\nIf-Unmodified-Since: Fri, 01 Jan 1999 00:00:00 GMT\r\n")->status,
      200)
      << "If-Unmodified-Since is ignored when If-Match is present";
}

TEST_P(HttpStaticFiles, ByteRanges) {
  std::string all = pattern(100);
  auto r = get("/data.bin", "Range: bytes=10-19\r\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 206);
  EXPECT_EQ(r->header("Content-Range"), "bytes 10-19/100");
  EXPECT_EQ(r->body, all.substr(10, 10));
  r = get("/data.bin", "Range: bytes=-5\r\n");
  EXPECT_EQ(r->body, all.substr(95));
  r = get("/data.bin", "Range: bytes=90-500\r\n");
  EXPECT_EQ(r->header("Content-Range"), "bytes 90-99/100");
  r = get("/data.bin", "Range: bytes=100-\r\n");
  EXPECT_EQ(r->status, 416);
  EXPECT_EQ(r->header("Content-Range"), "bytes */100");
  EXPECT_EQ(get("/data.bin", "Range: items=0-1\r\n")->status, 200);
  std::string etag = get("/data.bin")->header("ETag");
  EXPECT_EQ(get("/data.bin", "Range: bytes=0-1\r\nIf-Range: " + etag + "\r\n")->status, 206);
  EXPECT_EQ(get("/data.bin", "Range: bytes=0-1\r\nIf-Range: \"stale\"\r\n")->status, 200);
}

// The multipart/byteranges body (RFC 9110 14.6) of `parts` of `all`, as the server lays it out.
std::string byteranges(const std::string& boundary, const std::string& type, const std::string& all,
                       std::initializer_list<std::pair<std::size_t, std::size_t>> parts) {
  std::string body;
  for (auto [first, last] : parts) {
    body += (body.empty() ? "--" : "\r\n--") + boundary + "\r\nContent-Type: " + type + "\r\nContent-Range: bytes " +
            std::to_string(first) + "-" + std::to_string(last) + "/" + std::to_string(all.size()) + "\r\n\r\n" +
            all.substr(first, last - first + 1);
  }
  return body + "\r\n--" + boundary + "--\r\n";
}

std::string boundary_of(const http_reply& r) {
  std::string type = r.header("Content-Type");
  const std::string prefix = "multipart/byteranges; boundary=";
  return type.starts_with(prefix) ? type.substr(prefix.size()) : std::string();
}

TEST_P(HttpStaticFiles, SeveralRangesAreSentAsMultipartByteranges) {
  std::string all = pattern(100);
  const std::string type = "application/octet-stream";
  auto r = get("/data.bin", "Range: bytes=0-1,5-6\r\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 206);
  std::string boundary = boundary_of(*r);
  ASSERT_GE(boundary.size(), 16u) << r->header("Content-Type");
  EXPECT_FALSE(r->has_header("Content-Range")) << "each part carries its own";
  EXPECT_FALSE(r->header("ETag").empty());
  EXPECT_EQ(r->body, byteranges(boundary, type, all, {{0, 1}, {5, 6}}));
  r = get("/data.bin", "Range: bytes=50-59, -5,0-0\r\n");  // in the order asked
  EXPECT_EQ(r->body, byteranges(boundary_of(*r), type, all, {{50, 59}, {95, 99}, {0, 0}}));
  EXPECT_NE(boundary_of(*r), boundary) << "a fresh boundary for every response";
  r = get("/data.bin", "Range: bytes=0-1,500-600\r\n");  // one satisfiable range: no multipart
  EXPECT_EQ(r->status, 206);
  EXPECT_EQ(r->header("Content-Range"), "bytes 0-1/100");
  EXPECT_EQ(r->body, all.substr(0, 2));
  r = get("/data.bin", "Range: bytes=500-600,700-\r\n");
  EXPECT_EQ(r->status, 416);
  EXPECT_EQ(r->header("Content-Range"), "bytes */100");
  http_client c(port());
  r = c.exchange("HEAD /data.bin HTTP/1.1\r\nHost: t\r\nRange: bytes=0-1,5-6\r\n\r\n", true);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 206);
  EXPECT_FALSE(boundary_of(*r).empty());
  EXPECT_EQ(c.exchange(get_request("/style.css"))->body, "body{}") << "HEAD sent body bytes";
}

TEST_P(HttpStaticFiles, RangeSetsThatCouldAmplifyGetTheWholeFile) {
  std::string all = pattern(100);
  for (const char* abuse :
       {"bytes=0-9,5-14", "bytes=0-,0-", "bytes=-10,95-", "bytes=0-99,50-50", "bytes=0-1,x", "bytes=0-1,,"}) {
    auto r = get("/data.bin", std::string("Range: ") + abuse + "\r\n");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, abuse == std::string("bytes=0-1,,") ? 206 : 200) << abuse;
  }
  std::string sixteen = "bytes=0-0", seventeen;
  for (int i = 1; i < 16; ++i) sixteen += "," + std::to_string(2 * i) + "-" + std::to_string(2 * i);
  seventeen = sixteen + ",40-40";
  auto r = get("/data.bin", "Range: " + sixteen + "\r\n");
  EXPECT_EQ(r->status, 206);
  r = get("/data.bin", "Range: " + seventeen + "\r\n");
  EXPECT_EQ(r->status, 200) << "more than 16 ranges";
  EXPECT_EQ(r->body, all);
}

TEST_P(HttpStaticFiles, MultipartRangesOfALargeFileArriveExactly) {
  std::string all = pattern(5 * 1024 * 1024 + 17);
  auto r = get("/big.dat", "Range: bytes=4000000-4200000,10-300000,-17\r\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 206);
  std::string want = byteranges(boundary_of(*r), "application/octet-stream", all,
                                {{4000000, 4200000}, {10, 300000}, {all.size() - 17, all.size() - 1}});
  EXPECT_TRUE(r->body == want) << "body differs (" << r->body.size() << " bytes, " << want.size() << " expected)";
}

TEST_P(HttpStaticFiles, LargeFileAndItsMiddleArriveExactly) {
  std::string all = pattern(5 * 1024 * 1024 + 17);
  auto r = get("/big.dat");
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->body == all) << "body differs (" << r->body.size() << " bytes)";
  r = get("/big.dat", "Range: bytes=1000000-3000000\r\n");
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->body == all.substr(1000000, 2000001));
  http_client c(port());
  r = c.exchange("HEAD /big.dat HTTP/1.1\r\nHost: t\r\n\r\n", true);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->header("Content-Length"), std::to_string(all.size()));
  EXPECT_EQ(c.exchange(get_request("/style.css"))->body, "body{}") << "HEAD sent body bytes";
}

// The same through the loop's buffers instead of sendfile(2) (server_options::sendfile).
TEST_P(HttpStaticFiles, LargeFilesReadThroughTheLoopArriveExactly) {
  stop_server();
  start_server(routes_, {.sendfile = false});
  std::string all = pattern(5 * 1024 * 1024 + 17);
  http_client c(port());
  auto r = c.exchange(get_request("/big.dat"));
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->body == all) << "body differs (" << r->body.size() << " bytes)";
  r = c.exchange(get_request("/big.dat", "Range: bytes=70000-200000\r\n"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 206);
  EXPECT_TRUE(r->body == all.substr(70000, 130001));
}

// A client that reads a large file slowly holds no request buffers while the kernel
// sends the body (only its frames and the file), unless pipelined requests wait in them.
TEST_P(HttpStaticFiles, ASlowReaderOfALargeFileHoldsNoRequestBuffers) {
  {
    std::ofstream(root_ / "huge.dat").close();
    fs::resize_file(root_ / "huge.dat", 256u << 20);  // sparse: reads as zeros
  }
  http_client slow(port());
  int small = 4096;
  ASSERT_EQ(::setsockopt(slow.fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small), 0);
  ASSERT_TRUE(slow.send(get_request("/huge.dat")));
  char head[256];
  ASSERT_GT(recv_some(slow.fd(), head, sizeof head), 0) << "no response head: " << std::strerror(errno);
  http_client probe(port());
  auto lent = probe.exchange(get_request("/lent-states"));
  ASSERT_TRUE(lent);
  EXPECT_EQ(lent->body, "1") << "states held: the probe's own, and the slow reader's?";

  // With a second request pipelined behind it, the buffer holding it is kept.
  http_client piped(port());
  ASSERT_EQ(::setsockopt(piped.fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small), 0);
  ASSERT_TRUE(piped.send(get_request("/huge.dat") + get_request("/style.css")));
  ASSERT_GT(recv_some(piped.fd(), head, sizeof head), 0) << std::strerror(errno);
  lent = probe.exchange(get_request("/lent-states"));
  ASSERT_TRUE(lent);
  EXPECT_EQ(lent->body, "2");
}

TEST_P(HttpStaticFiles, NothingOutsideTheRootIsReachable) {
  EXPECT_EQ(status_of("/../secret.txt"), 404);
  EXPECT_EQ(status_of("/%2e%2e/secret.txt"), 404);
  EXPECT_EQ(status_of("/sub/%2E%2e/%2e%2E/secret.txt"), 404);
  EXPECT_EQ(status_of("/static/../../secret.txt"), 404);
  EXPECT_EQ(status_of("/..%2fsecret.txt"), 400) << "an encoded slash";
  EXPECT_EQ(status_of("/link-out"), 403) << "a symlink leading out of the root";
  EXPECT_EQ(status_of("/link-in"), 200) << "a symlink inside the root";
  http_client c(port());
  auto r = c.exchange("GET http://t/../secret.txt HTTP/1.1\r\nHost: t\r\n\r\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  r = c.exchange("POST /style.css HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
}

RINGIO_ALL_BACKENDS(HttpStaticFiles);

}  // namespace
