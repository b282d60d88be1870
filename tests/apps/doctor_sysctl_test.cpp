// SPDX-License-Identifier: Apache-2.0
// ringio-doctor with kernel.io_uring_disabled set (2: nobody; 1: only privileged users
// and kernel.io_uring_group). Host-wide, so these run as root only, alone (ctest
// RUN_SERIAL), and restore the old value.
#include <grp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "support/doctor_run.hpp"
#include "support/sysctl_override.hpp"

using namespace ringio_test;

namespace {

constexpr const char* disabled_path = "/proc/sys/kernel/io_uring_disabled";

// Why a sysctl test cannot run here, or "" when it can.
std::string sysctl_unavailable() {
  if (::geteuid() != 0) return "needs root to set kernel.io_uring_disabled";
  if (::access(disabled_path, W_OK) != 0) return "kernel.io_uring_disabled is absent (Linux < 6.6) or read-only";
  if (!uring_usable_here()) return "io_uring is unavailable on this host already";
  return "";
}

TEST(DoctorSysctl, DisabledForEveryoneIsNamedWithItsFix) {
  if (auto why = sysctl_unavailable(); !why.empty()) GTEST_SKIP() << why;
  doctor_run r;
  {
    sysctl_override off(disabled_path, "2");
    ASSERT_TRUE(off.ok());
    r = run_doctor({"--json"});
  }
  EXPECT_EQ(r.status, 1) << r.out;
  json_value v = json_of(r);
  const json_value* b = v.get("blocker");
  ASSERT_TRUE(b != nullptr && b->kind == json_value::type::object) << r.out;
  EXPECT_EQ(text_at(*b, "kind"), "io_uring_disabled");
  EXPECT_NE(text_at(*b, "cause").find("io_uring_disabled = 2"), std::string::npos) << r.out;
  EXPECT_NE(text_at(*b, "fix").find("sysctl -w kernel.io_uring_disabled=0"), std::string::npos) << r.out;
  EXPECT_EQ(text_at(v, "backend"), "epoll");
  EXPECT_EQ(run_doctor({}).status, 0) << "io_uring_disabled was not restored";
}

TEST(DoctorSysctl, DisabledOutsideTheGroupNamesTheGroup) {
  if (auto why = sysctl_unavailable(); !why.empty()) GTEST_SKIP() << why;
  // As an unprivileged user (nobody): root's CAP_SYS_ADMIN passes io_uring_disabled = 1.
  auto as_nobody = [] { return ::setgroups(0, nullptr) == 0 && ::setgid(65534) == 0 && ::setuid(65534) == 0; };
  doctor_run r;
  {
    sysctl_override limited(disabled_path, "1");
    ASSERT_TRUE(limited.ok());
    r = run_doctor({"--json"}, as_nobody);
  }
  if (r.status == 126 || r.status == 127) GTEST_SKIP() << "the doctor cannot run as nobody here (" << r.status << ")";
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  json_value v = json_of(r);
  const json_value* b = v.get("blocker");
  ASSERT_TRUE(b != nullptr && b->kind == json_value::type::object) << r.out;
  EXPECT_EQ(text_at(*b, "kind"), "io_uring_disabled");
  EXPECT_NE(text_at(*b, "cause").find("io_uring_disabled = 1"), std::string::npos) << r.out;
  EXPECT_NE(text_at(*b, "cause").find("kernel.io_uring_group"), std::string::npos) << r.out;
}

}  // namespace
