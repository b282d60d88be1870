// SPDX-License-Identifier: Apache-2.0
// backend_test — a fixture that runs each test once per backend (uring, epoll,
// uring-poll, and sim for the suites that say so) on a fresh io_context driven by the
// test thread. Under sim the test thread gets a sim::world first (seed RINGIO_SIM_SEED,
// default 1).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <ostream>
#include <string>
#include <system_error>

#include "ringio/io_context.hpp"
#include "ringio/sim/world.hpp"
#include "ringio/sync_wait.hpp"
#include "ringio/task.hpp"

namespace ringio {
inline void PrintTo(backend_kind k, std::ostream* os) { *os << to_string(k); }
}  // namespace ringio

namespace ringio_test {

class backend_test : public ::testing::TestWithParam<ringio::backend_kind> {
 protected:
  void SetUp() override {
    if (GetParam() == ringio::backend_kind::sim) {
      const char* seed = std::getenv("RINGIO_SIM_SEED");
      world_.emplace(seed != nullptr ? std::strtoull(seed, nullptr, 10) : 1);
    }
    try {
      ctx_.emplace(ringio::io_context_options{.backend = GetParam(), .quiet = true});
    } catch (const std::system_error& e) {
      GTEST_SKIP() << "backend " << ringio::to_string(GetParam()) << " cannot start here: " << e.what();
    }
  }
  void TearDown() override {
    ctx_.reset();
    world_.reset();
  }

  ringio::io_context& ctx() { return *ctx_; }
  template <class T>
  T run(ringio::task<T> t) {
    return ringio::sync_wait(*ctx_, std::move(t));
  }

 private:
  std::optional<ringio::sim::world> world_;  // before ctx_: destroyed after it
  std::optional<ringio::io_context> ctx_;
};

inline std::string backend_param_name(const ::testing::TestParamInfo<ringio::backend_kind>& info) {
  std::string s(ringio::to_string(info.param));
  for (char& c : s)
    if (c == '-') c = '_';
  return s;
}

}  // namespace ringio_test

/// Runs every TEST_P of `suite` on the three backends.
#define RINGIO_ALL_BACKENDS(suite)                                                                                   \
  INSTANTIATE_TEST_SUITE_P(                                                                                          \
      , suite,                                                                                                       \
      ::testing::Values(ringio::backend_kind::uring, ringio::backend_kind::epoll, ringio::backend_kind::uring_poll), \
      ringio_test::backend_param_name)

/// Runs every TEST_P of `suite` on the three backends and in a simulated world.
#define RINGIO_ALL_BACKENDS_AND_SIM(suite)                                                                 \
  INSTANTIATE_TEST_SUITE_P(, suite,                                                                        \
                           ::testing::Values(ringio::backend_kind::uring, ringio::backend_kind::epoll,     \
                                             ringio::backend_kind::uring_poll, ringio::backend_kind::sim), \
                           ringio_test::backend_param_name)
