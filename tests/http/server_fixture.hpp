// SPDX-License-Identifier: Apache-2.0
// server_fixture — runs an http::server on a background thread, on the backend of the
// test's parameter, with a listener on 127.0.0.1 (kernel-chosen port). The test
// thread is then an ordinary blocking client.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "ringio/http/router.hpp"
#include "ringio/http/server.hpp"
#include "ringio/io_context.hpp"
#include "ringio/net/stream_listener.hpp"
#include "ringio/sync_wait.hpp"
#include "support/backend_test.hpp"
#include "support/loopback.hpp"

#ifdef RINGIO_HTTP_TEST_TLS
#include "ringio/http/https.hpp"
#include "ringio/tls/context.hpp"
#include "tls/test_certs.hpp"
#endif

namespace ringio_test {

class http_server_test : public ::testing::TestWithParam<ringio::backend_kind> {
 protected:
  void SetUp() override {
    try {
      ringio::io_context probe(ringio::io_context_options{.backend = GetParam(), .quiet = true});
    } catch (const std::system_error& e) {
      GTEST_SKIP() << "backend " << ringio::to_string(GetParam()) << " cannot start here: " << e.what();
    }
  }
  void TearDown() override { stop_server(); }

  /// Starts serving `routes` (which must outlive the test) with `opts`; log lines are
  /// collected (see log_lines()).
  void start_server(const ringio::http::router& routes, ringio::http::server_options opts = {}) {
    opts.log = [this](std::string_view line) {
      std::lock_guard lock(log_mu_);
      log_.emplace_back(line);
    };
    stop_ = std::stop_source();  // a fresh one when a test restarts the server
    server_ = std::make_unique<ringio::http::server>(routes, std::move(opts));
    listener_ = listen_loopback();
    port_ = address_of(listener_).port();
    thread_ = std::thread([this, backend = GetParam()] {
      ringio::io_context ctx(ringio::io_context_options{.backend = backend, .quiet = true});
#ifdef RINGIO_HTTP_TEST_TLS
      // The same tests over HTTPS (https_protocol_tests).
      static const auto tls = ringio::tls::context::server(
          {.certificate_chain_file = test_certs::get().server_cert, .private_key_file = test_certs::get().server_key});
      ringio::sync_wait(ctx, ringio::http::serve_tls(*server_, *tls, listener_, stop_.get_token()));
#else
      ringio::sync_wait(ctx, server_->serve(listener_, stop_.get_token()));
#endif
    });
  }
  /// Graceful stop: waits until every connection has ended.
  void stop_server() {
    if (!thread_.joinable()) return;
    stop_.request_stop();
    thread_.join();
  }

  [[nodiscard]] std::uint16_t port() const { return port_; }
  ringio::http::server& server() { return *server_; }
  std::vector<std::string> log_lines() {
    std::lock_guard lock(log_mu_);
    return log_;
  }

 private:
  std::unique_ptr<ringio::http::server> server_;
  ringio::stream_listener listener_;
  std::uint16_t port_ = 0;
  std::stop_source stop_;
  std::thread thread_;
  std::mutex log_mu_;
  std::vector<std::string> log_;
};

}  // namespace ringio_test
