// SPDX-License-Identifier: Apache-2.0
// parser_bench — ns per request for ringio's request parser and Boost.Beast's
// basic_parser on three typical requests (the numbers behind docs/http.md). Not a
// test: run build/<dir>/tests/http_parser_bench [iterations].
#include <boost/beast/http/basic_parser.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "ringio/http/chunked_decoder.hpp"
#include "ringio/http/request_parser.hpp"

namespace {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;

// Beast with callbacks that only look at their arguments, as a server would.
class beast_request final : public bhttp::basic_parser<true> {
 public:
  std::size_t seen = 0;

 private:
  void on_request_impl(bhttp::verb, beast::string_view m, beast::string_view t, int, beast::error_code&) override {
    seen += m.size() + t.size();
  }
  void on_response_impl(int, beast::string_view, int, beast::error_code&) override {}
  void on_field_impl(bhttp::field, beast::string_view n, beast::string_view v, beast::error_code&) override {
    seen += n.size() + v.size();
  }
  void on_header_impl(beast::error_code&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>&, beast::error_code&) override {}
  std::size_t on_body_impl(beast::string_view s, beast::error_code&) override { return seen += s.size(), s.size(); }
  void on_chunk_header_impl(std::uint64_t, beast::string_view, beast::error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, beast::string_view s, beast::error_code&) override {
    return seen += s.size(), s.size();
  }
  void on_finish_impl(beast::error_code&) override {}
};

const struct {
  const char* name;
  std::string text;
} requests[] = {
    {"wrk hello world (1 field)", "GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"},
    {"Chromium page load (11 fields)",
     "GET /style.css HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nConnection: keep-alive\r\nsec-ch-ua: \"Chromium\";v=\"156\", "
     "\"Not-A.Brand\";v=\"24\"\r\nsec-ch-ua-mobile: ?0\r\nUser-Agent: Mozilla/5.0 (X11; Linux x86_64) "
     "AppleWebKit/537.36 "
     "(KHTML, like Gecko) HeadlessChrome/156.0.0.0 Safari/537.36\r\nsec-ch-ua-platform: \"Linux\"\r\nAccept: "
     "text/css,*/*;q=0.1\r\nSec-Fetch-Site: same-origin\r\nSec-Fetch-Mode: no-cors\r\nReferer: "
     "http://127.0.0.1:8080/\r\nAccept-Encoding: gzip, deflate, br, zstd\r\n\r\n"},
    {"chunked POST (2 chunks)",
     "POST /api HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
     "10\r\n{\"key\": \"value\",\r\n8\r\n \"n\": 1}\r\n0\r\n\r\n"},
};

template <class F>
double ns_per_call(long iterations, F&& f) {
  auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < iterations; ++i) f();
  std::chrono::duration<double, std::nano> d = std::chrono::steady_clock::now() - t0;
  return d.count() / static_cast<double>(iterations);
}

}  // namespace

int main(int argc, char** argv) {
  long iterations = argc > 1 ? std::atol(argv[1]) : 2'000'000;
  std::size_t sink = 0;
  std::printf("%-32s %12s %12s %8s\n", "request", "ringio ns", "beast ns", "ratio");
  for (const auto& r : requests) {
    std::string buf = r.text;
    ringio::http::request req;
    ringio::http::request_parser parser;
    ringio::http::chunked_decoder chunks;
    double ours = 1e30, theirs = 1e30;
    for (int round = 0; round < 5; ++round) {  // best of five, interleaved
      ours = std::min(ours, ns_per_call(iterations, [&] {
                        req.clear();
                        parser.reset();
                        auto h = parser.parse(buf, req);
                        sink += h.size + req.headers().size();
                        if (req.chunked()) {
                          buf = r.text;  // decoding is in place: restore (the copy is timed; it is small)
                          chunks.reset();
                          chunks.decode(buf.data() + h.size, buf.size() - h.size);
                          sink += chunks.body_size();
                        }
                      }));
      theirs = std::min(theirs, ns_per_call(iterations, [&] {
                          if (req.chunked()) buf = r.text;  // the same copy as above, for a fair comparison
                          beast_request p;
                          p.eager(true);
                          beast::error_code ec;
                          sink += p.put(boost::asio::buffer(buf), ec) + p.seen;
                        }));
    }
    std::printf("%-32s %12.1f %12.1f %7.2fx\n", r.name, ours, theirs, theirs / ours);
  }
  return sink == 42 ? 1 : 0;
}
