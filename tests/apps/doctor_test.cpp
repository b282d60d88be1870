// SPDX-License-Identifier: Apache-2.0
// ringio-doctor run under the conditions it diagnoses: a seccomp filter denying an
// io_uring syscall (EPERM, ENOSYS), a low RLIMIT_NOFILE; and its library call agreeing
// with the backend an io_context picks. kernel.io_uring_disabled: doctor_sysctl_test.cpp.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "ringio/doctor/diagnose.hpp"
#include "ringio/ringio.hpp"
#include "support/doctor_run.hpp"
#include "support/syscall_filter.hpp"

using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

// A seccomp filter that denies `nr` with `err`, built before the fork.
auto denying(long nr, int err) {
  return [f = syscall_filter({nr}, err)] { return f.install(); };
}

TEST(DoctorCli, HumanOutputNamesKernelBackendFeaturesAndLimits) {
  auto r = run_doctor({});
  ASSERT_TRUE(r.status == 0 || r.status == 1) << r.status << r.err;
  EXPECT_NE(r.out.find("on Linux "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nbackend: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("RLIMIT_NOFILE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("net.core.somaxconn"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("net.ipv4.ip_local_port_range"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("CPUs"), std::string::npos) << r.out;
  if (r.status == 0) {
    EXPECT_NE(r.out.find("io_uring (preferred backend): usable"), std::string::npos) << r.out;
    for (const char* f :
         {"DEFER_TASKRUN", "SINGLE_ISSUER", "multishot accept", "multishot recv", "provided buffer rings",
          "recv bundles", "send bundles", "incremental buffers", "zero-copy send", "direct descriptors",
          "FIXED_FD_INSTALL", "min-wait", "no-iowait", "ring resize", "registered ring fd", "NO_SQARRAY",
          "IORING_OP_OPENAT", "IORING_OP_WAITID", "IORING_OP_EPOLL_WAIT"}) {
      EXPECT_NE(r.out.find(f), std::string::npos) << f << " missing:\n" << r.out;
    }
  } else {
    EXPECT_NE(r.out.find("NOT usable"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("fix:"), std::string::npos) << r.out;
  }
}

TEST(DoctorCli, JsonIsValidAndItsVerdictIsTheExitStatus) {
  auto r = run_doctor({"--json"});
  json_value v = json_of(r);
  ASSERT_EQ(v.kind, json_value::type::object);
  ASSERT_NE(v.get("uring_usable"), nullptr);
  EXPECT_EQ(v.get("uring_usable")->flag, r.status == 0);
  EXPECT_FALSE(text_at(v, "kernel").empty());
  ASSERT_NE(v.get("features"), nullptr);
  for (const json_value& f : v.get("features")->items) {
    EXPECT_FALSE(text_at(f, "name").empty());
    EXPECT_FALSE(text_at(f, "reason").empty()) << text_at(f, "name");
    ASSERT_NE(f.get("available"), nullptr);
    EXPECT_EQ(f.get("available")->kind, json_value::type::boolean);
  }
  ASSERT_NE(v.get("limits"), nullptr);
  EXPECT_GE(v.get("limits")->items.size(), 6u);
  if (r.status == 0) {
    EXPECT_EQ(v.get("blocker")->kind, json_value::type::null);
    EXPECT_EQ(text_at(v, "backend"), "uring");
  }
  // And valid to a second, independent reader.
  if (::access("/usr/bin/python3", X_OK) == 0) {
    auto py = confined_process({"/usr/bin/python3", "-c", "import json,sys; json.loads(sys.argv[1])", r.out},
                               [] { return true; });
    EXPECT_EQ(py.wait(20s), 0) << py.stderr_text();
  }
}

TEST(DoctorCli, BadArgumentPrintsUsageAndExitsTwo) {
  auto r = run_doctor({"--frobnicate"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("usage: ringio-doctor"), std::string::npos) << r.err;
  EXPECT_EQ(run_doctor({"--help"}).status, 0);
}

TEST(DoctorLibrary, AgreesWithTheBackendAnIoContextPicks) {
  if (std::getenv("RINGIO_BACKEND") != nullptr)
    GTEST_SKIP() << "RINGIO_BACKEND is set: the default choice is overridden";
  ringio::doctor::report r = ringio::doctor::diagnose();
  ringio::io_context ctx(ringio::io_context_options{.quiet = true});
  ASSERT_TRUE(r.backend.has_value()) << r.backend_reason;
  EXPECT_EQ(*r.backend, ctx.backend()) << r.backend_reason;
  EXPECT_EQ(r.uring_usable, ctx.backend() == ringio::backend_kind::uring);
  EXPECT_EQ(r.blocker.has_value(), !r.uring_usable);
  EXPECT_FALSE(r.kernel.empty());
}

// Denied io_uring_setup / io_uring_register: the blocker, its fix and the fall-back.
void expect_seccomp_blocker(const doctor_run& r, const std::string& error_part) {
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  json_value v = json_of(r);
  const json_value* b = v.get("blocker");
  ASSERT_TRUE(b != nullptr && b->kind == json_value::type::object) << r.out;
  EXPECT_EQ(text_at(*b, "kind"), "seccomp") << r.out;
  EXPECT_NE(text_at(*b, "error").find(error_part), std::string::npos) << r.out;
  EXPECT_NE(text_at(*b, "fix").find("ringio-io_uring.json"), std::string::npos) << r.out;
  EXPECT_EQ(text_at(v, "backend"), "epoll") << r.out;
  EXPECT_NE(text_at(v, "backend_reason").find("falls back to epoll"), std::string::npos) << r.out;
  EXPECT_TRUE(v.get("features")->items.empty());
}

TEST(DoctorSeccomp, SetupDeniedWithEpermNamesSeccompAndTheFallBack) {
  if (!uring_usable_here()) GTEST_SKIP() << "io_uring is unavailable on this host already";
  auto r = run_doctor({"--json"}, denying(__NR_io_uring_setup, EPERM));
  expect_seccomp_blocker(r, "io_uring_setup: Operation not permitted");
  EXPECT_NE(text_at(*json_of(r).get("blocker"), "cause").find("EPERM"), std::string::npos) << r.out;
  auto text = run_doctor({}, denying(__NR_io_uring_setup, EPERM));
  EXPECT_EQ(text.status, 1);
  EXPECT_NE(text.out.find("blocker: seccomp"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("backend: epoll"), std::string::npos) << text.out;
}

TEST(DoctorSeccomp, SetupDeniedWithEnosysIsTheContainerCase) {
  if (!uring_usable_here()) GTEST_SKIP() << "io_uring is unavailable on this host already";
  auto r = run_doctor({"--json"}, denying(__NR_io_uring_setup, ENOSYS));
  expect_seccomp_blocker(r, "io_uring_setup: Function not implemented");
  EXPECT_NE(text_at(*json_of(r).get("blocker"), "cause").find("ENOSYS"), std::string::npos) << r.out;
}

TEST(DoctorSeccomp, RegisterDeniedNamesTheProbeCall) {
  if (!uring_usable_here()) GTEST_SKIP() << "io_uring is unavailable on this host already";
  auto r = run_doctor({"--json"}, denying(__NR_io_uring_register, EPERM));
  expect_seccomp_blocker(r, "IORING_REGISTER_PROBE");
}

// ENOMEM from io_uring_setup is how a kernel before 5.12 answers when RLIMIT_MEMLOCK
// is too small for the ring; a seccomp filter gives that answer here.
TEST(DoctorBlocker, OutOfLockedMemoryNamesMemlockAndTheLimit) {
  if (!uring_usable_here()) GTEST_SKIP() << "io_uring is unavailable on this host already";
  auto deny = denying(__NR_io_uring_setup, ENOMEM);
  auto r = run_doctor({"--json"}, [&deny] {
    rlimit small{65536, 65536};
    return ::setrlimit(RLIMIT_MEMLOCK, &small) == 0 && deny();
  });
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  json_value v = json_of(r);
  const json_value* b = v.get("blocker");
  ASSERT_TRUE(b != nullptr && b->kind == json_value::type::object) << r.out;
  EXPECT_EQ(text_at(*b, "kind"), "memlock");
  EXPECT_NE(text_at(*b, "cause").find("RLIMIT_MEMLOCK (soft 65536 bytes)"), std::string::npos) << r.out;
  EXPECT_NE(text_at(*b, "fix").find("ulimit -l"), std::string::npos) << r.out;
  EXPECT_EQ(text_at(v, "backend"), "epoll");
}

TEST(DoctorLimits, LowOpenFileLimitIsReportedWithAWarning) {
  auto r = run_doctor({"--json"}, [] {
    rlimit low{64, 64};
    return ::setrlimit(RLIMIT_NOFILE, &low) == 0;
  });
  ASSERT_TRUE(r.status == 0 || r.status == 1) << r.status << r.err;
  json_value v = json_of(r);
  bool found = false;
  for (const json_value& l : v.get("limits")->items) {
    if (text_at(l, "name") != "RLIMIT_NOFILE") continue;
    found = true;
    EXPECT_EQ(text_at(l, "value"), "soft 64, hard 64");
    EXPECT_NE(text_at(l, "warning").find("EMFILE"), std::string::npos) << text_at(l, "warning");
  }
  EXPECT_TRUE(found) << r.out;
  auto text = run_doctor({}, [] {
    rlimit low{64, 64};
    return ::setrlimit(RLIMIT_NOFILE, &low) == 0;
  });
  EXPECT_NE(text.out.find("warning: at most 64 descriptors"), std::string::npos) << text.out;
}

}  // namespace
