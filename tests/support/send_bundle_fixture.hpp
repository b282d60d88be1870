// SPDX-License-Identifier: Apache-2.0
// send_bundle_fixture — the fixture of the send-bundle suites: one loop per test, made
// on a backend with io_context_options::send_bundles on or off (the two parameters),
// or the test skipped with the reason when the backend cannot start here.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <optional>
#include <string>
#include <system_error>
#include <tuple>
#include <utility>

#include "ringio/ringio.hpp"

namespace ringio_test {

using send_bundle_param = std::tuple<ringio::backend_kind, bool>;

class send_bundle_fixture : public ::testing::TestWithParam<send_bundle_param> {
 protected:
  void SetUp() override {
    try {
      ctx_.emplace(ringio::io_context_options{.backend = backend(), .quiet = true, .send_bundles = bundles()});
    } catch (const std::system_error& e) {
      GTEST_SKIP() << "backend " << ringio::to_string(backend()) << " cannot start here: " << e.what();
    }
    std::printf("%s\n", ctx_->describe().c_str());
  }
  void TearDown() override { ctx_.reset(); }
  [[nodiscard]] ringio::backend_kind backend() const { return std::get<0>(GetParam()); }
  [[nodiscard]] bool bundles() const { return std::get<1>(GetParam()); }
  ringio::io_context& ctx() { return *ctx_; }
  template <class T>
  T run(ringio::task<T> t) {
    return ringio::sync_wait(*ctx_, std::move(t));
  }

 private:
  std::optional<ringio::io_context> ctx_;
};

/// Test names: the backend, then `_bundles_on` or `_bundles_off`.
inline std::string send_bundle_param_name(const ::testing::TestParamInfo<send_bundle_param>& info) {
  std::string s(ringio::to_string(std::get<0>(info.param)));
  for (char& c : s)
    if (c == '-') c = '_';
  return s + (std::get<1>(info.param) ? "_bundles_on" : "_bundles_off");
}

}  // namespace ringio_test
