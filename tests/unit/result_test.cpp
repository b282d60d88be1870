// SPDX-License-Identifier: Apache-2.0
#include "ringio/result.hpp"

#include <gtest/gtest.h>

#include <string>

using ringio::result;
using ringio::unexpected;

TEST(Result, HoldsAValue) {
  result<int> r = 42;
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, 42);
  EXPECT_EQ(r.value(), 42);
  EXPECT_FALSE(r.error());
}

TEST(Result, HoldsAnErrorComparableToErrc) {
  result<std::string> r = unexpected(std::errc::connection_refused);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), std::errc::connection_refused);
  EXPECT_EQ(r.value_or("fallback"), "fallback");
}

TEST(Result, ValueOfAnErrorThrowsWithTheCode) {
  result<int> r = unexpected(std::errc::timed_out);
  try {
    (void)r.value();
    FAIL() << "value() did not throw";
  } catch (const ringio::bad_result_access& e) {
    EXPECT_EQ(e.code(), std::errc::timed_out);
  }
}

TEST(Result, VoidResult) {
  result<void> ok;
  EXPECT_TRUE(ok);
  result<void> bad = unexpected(std::errc::operation_canceled);
  EXPECT_FALSE(bad);
  EXPECT_EQ(bad.error(), std::errc::operation_canceled);
  EXPECT_THROW(bad.value(), ringio::bad_result_access);
}

TEST(Result, NegativeErrnoBecomesTheMatchingCode) {
  EXPECT_EQ(ringio::errno_code(-ECONNRESET), std::errc::connection_reset);
  EXPECT_EQ(ringio::errno_code(-EAGAIN), std::errc::resource_unavailable_try_again);
}

TEST(Result, RingioErrorsHaveReadableMessages) {
  std::error_code ec = ringio::errc::invalid_port;
  EXPECT_EQ(std::string(ec.category().name()), "ringio");
  EXPECT_NE(ec.message().find("port"), std::string::npos);
}

TEST(Result, MovesOutMoveOnlyValues) {
  result<std::unique_ptr<int>> r = std::make_unique<int>(7);
  std::unique_ptr<int> p = *std::move(r);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(*p, 7);
}
