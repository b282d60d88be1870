// SPDX-License-Identifier: Apache-2.0
// Built with nothing but pkg-config's flags (check.sh): the core, fiber, tls and http
// libraries and what they need (liburing, Boost.Context, OpenSSL) link in its order.
#include <cstdio>
#include <ringio/fiber.hpp>
#include <ringio/http/status.hpp>
#include <ringio/io_context.hpp>
#include <ringio/sync_wait.hpp>
#include <ringio/tls/error.hpp>
#include <ringio/version.hpp>

int main() {
  ringio::io_context ctx;
  int from_fiber = ringio::sync_wait(ctx, ringio::fiber([] { return 42; }));
  bool ok = from_fiber == 42 && ringio::http::reason_phrase(404) == "Not Found" &&
            !ringio::tls::tls_category().message(1).empty() && ringio::version() == ringio::header_version;
  std::printf("pkg-config consumer: %s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
