// SPDX-License-Identifier: Apache-2.0
// http_get — fetches a URL with ringio::http::client and prints the status line and
// the body: `http_get http://127.0.0.1:8080/hello`. Redirects are followed; a second
// argument "--head-only" prints only the status and the fields.
#include <cstdio>
#include <ringio/http/client.hpp>
#include <ringio/io_context.hpp>
#include <ringio/sync_wait.hpp>
#include <string_view>

using namespace ringio;

task<int> fetch(std::string_view url, bool head_only) {
  http::client client({.follow_redirects = true});
  auto response = co_await client.stream_request(http::request_spec{.url = url});
  if (!response) {
    std::fprintf(stderr, "http_get: %s\n", response.error().message().c_str());
    co_return 1;
  }
  std::printf("%d %.*s\n", response->status(), static_cast<int>(response->reason().size()), response->reason().data());
  if (head_only) {
    for (const http::header& h : response->headers())
      std::printf("%.*s: %.*s\n", static_cast<int>(h.name.size()), h.name.data(), static_cast<int>(h.value.size()),
                  h.value.data());
    co_return 0;
  }
  char buf[16384];
  for (;;) {  // the body as it arrives, in pieces
    auto n = co_await response->read(mutable_buffer(buf, sizeof buf));
    if (!n) {
      std::fprintf(stderr, "http_get: %s\n", n.error().message().c_str());
      co_return 1;
    }
    if (*n == 0) break;
    std::fwrite(buf, 1, *n, stdout);
  }
  co_return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: http_get URL [--head-only]\n");
    return 2;
  }
  io_context ctx;
  return sync_wait(ctx, fetch(argv[1], argc > 2 && std::string_view(argv[2]) == "--head-only"));
}
