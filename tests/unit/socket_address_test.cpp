// SPDX-License-Identifier: Apache-2.0
#include "ringio/net/socket_address.hpp"

#include <gtest/gtest.h>

using ringio::socket_address;

TEST(SocketAddress, ParsesIpv4) {
  auto a = socket_address::parse("127.0.0.1:8080");
  ASSERT_TRUE(a) << a.error().message();
  EXPECT_TRUE(a->is_ipv4());
  EXPECT_EQ(a->port(), 8080);
  EXPECT_EQ(a->to_string(), "127.0.0.1:8080");
}

TEST(SocketAddress, ParsesIpv6InBrackets) {
  auto a = socket_address::parse("[::1]:443");
  ASSERT_TRUE(a) << a.error().message();
  EXPECT_TRUE(a->is_ipv6());
  EXPECT_EQ(a->port(), 443);
  EXPECT_EQ(a->to_string(), "[::1]:443");
}

TEST(SocketAddress, ParsesLocalhost) {
  auto a = socket_address::parse("localhost:1");
  ASSERT_TRUE(a);
  EXPECT_EQ(*a, socket_address::loopback(1));
}

TEST(SocketAddress, ParsesUnixPathsAndAbstractNames) {
  auto p = socket_address::parse("unix:/tmp/x.sock");
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->is_unix());
  EXPECT_EQ(p->to_string(), "unix:/tmp/x.sock");
  auto bare = socket_address::parse("/run/y.sock");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->to_string(), "unix:/run/y.sock");
  auto abstract = socket_address::parse("@ringio-test");
  ASSERT_TRUE(abstract);
  EXPECT_EQ(abstract->to_string(), "unix:@ringio-test");
}

TEST(SocketAddress, RejectsBadInputWithSpecificErrors) {
  EXPECT_EQ(socket_address::parse("127.0.0.1").error(), ringio::errc::invalid_port);
  EXPECT_EQ(socket_address::parse("127.0.0.1:").error(), ringio::errc::invalid_port);
  EXPECT_EQ(socket_address::parse("127.0.0.1:65536").error(), ringio::errc::invalid_port);
  EXPECT_EQ(socket_address::parse("127.0.0.1:8x").error(), ringio::errc::invalid_port);
  EXPECT_EQ(socket_address::parse("300.0.0.1:80").error(), ringio::errc::invalid_address);
  EXPECT_EQ(socket_address::parse("example.com:80").error(), ringio::errc::invalid_address);
  EXPECT_EQ(socket_address::parse("::1:80").error(), ringio::errc::invalid_address);
  EXPECT_EQ(socket_address::parse("[::1]80").error(), ringio::errc::invalid_address);
  EXPECT_EQ(socket_address::parse("[127.0.0.1]:80").error(), ringio::errc::invalid_address);
  EXPECT_EQ(socket_address::parse("unix:").error(), ringio::errc::invalid_address);
  EXPECT_EQ(socket_address::parse("unix:/" + std::string(200, 'a')).error(), ringio::errc::address_too_long);
}

TEST(SocketAddress, WithPortKeepsTheHost) {
  auto a = socket_address::parse("10.1.2.3:1")->with_port(9);
  EXPECT_EQ(a.to_string(), "10.1.2.3:9");
}

TEST(SocketAddress, EmptyAddressIsUnspecified) {
  socket_address a;
  EXPECT_EQ(a.family(), AF_UNSPEC);
  EXPECT_EQ(a.to_string(), "<unspecified>");
}
