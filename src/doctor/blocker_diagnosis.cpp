// SPDX-License-Identifier: Apache-2.0
#include "doctor/blocker_diagnosis.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "doctor/proc_files.hpp"

namespace ringio::doctor::detail {
namespace {

constexpr const char* profile_hint =
    "allow io_uring_setup, io_uring_enter and io_uring_register in the seccomp profile: merge ringio's "
    "fragment (deploy/seccomp/ringio-io_uring.json, installed in share/ringio/seccomp/) into the runtime's "
    "profile and pass it (docker run --security-opt seccomp=<merged profile>); or run with the epoll "
    "backend (RINGIO_BACKEND=epoll)";

// Whether this process is in group `gid` (effective or supplementary).
bool in_group(long gid) {
  if (gid < 0) return false;
  if (static_cast<long>(::getegid()) == gid) return true;
  const int n = ::getgroups(0, nullptr);
  if (n <= 0) return false;
  std::vector<gid_t> groups(static_cast<std::size_t>(n));
  const int got = ::getgroups(n, groups.data());
  for (int i = 0; i < got; ++i)
    if (static_cast<long>(groups[static_cast<std::size_t>(i)]) == gid) return true;
  return false;
}

bool seccomp_filtered() { return read_keyed_number("/proc/self/status", "Seccomp").value_or(0) == 2; }

std::string seccomp_cause(int err) {
  return std::string(
             "a seccomp filter is installed on this process (/proc/self/status: Seccomp: 2) and the "
             "io_uring syscall returned ") +
         (err == ENOSYS
              ? "ENOSYS: the filter treats it as unknown, as container runtimes do"
              : "EPERM: the filter denies it, as container runtimes' default profiles do (Docker 25.0 and later)");
}

// The errno's name and text, e.g. "EACCES (Permission denied)".
std::string errno_text(int err) {
  const char* name = err == EPERM ? "EPERM" : err == EACCES ? "EACCES" : err == ENOSYS ? "ENOSYS" : nullptr;
  const std::string text = std::system_category().message(err);
  return name != nullptr ? std::string(name) + " (" + text + ")" : "errno " + std::to_string(err) + " (" + text + ")";
}

// io_uring_setup failed with EPERM or EACCES.
blocker permission(blocker b, int err) {
  const std::optional<long> disabled = read_number("/proc/sys/kernel/io_uring_disabled");
  const long group = read_number("/proc/sys/kernel/io_uring_group").value_or(-1);
  const std::string also = seccomp_filtered() ? " (a seccomp filter is installed on this process too)" : "";
  if (disabled.value_or(0) == 2) {
    b.kind = "io_uring_disabled";
    b.cause = "kernel.io_uring_disabled = 2: io_uring is disabled for every process" + also;
    b.fix =
        "sysctl -w kernel.io_uring_disabled=0 (or 1, with kernel.io_uring_group set to a group the "
        "server runs in), or run with the epoll backend (RINGIO_BACKEND=epoll)";
    return b;
  }
  if (disabled.value_or(0) == 1 && !in_group(group)) {
    b.kind = "io_uring_disabled";
    b.cause = "kernel.io_uring_disabled = 1: io_uring only for CAP_SYS_ADMIN and members of kernel.io_uring_group (" +
              (group < 0 ? std::string("-1: no group") : std::to_string(group)) + "); this process is neither" + also;
    b.fix = group < 0 ? "sysctl -w kernel.io_uring_group=<gid> and run the server in that group, or sysctl -w "
                        "kernel.io_uring_disabled=0"
                      : "run the server in group " + std::to_string(group) +
                            " (kernel.io_uring_group), or sysctl -w kernel.io_uring_disabled=0";
    return b;
  }
  if (seccomp_filtered() && err == EPERM) {
    b.kind = "seccomp";
    b.cause = seccomp_cause(EPERM);
    b.fix = profile_hint;
    return b;
  }
  b.kind = "other";
  if (seccomp_filtered()) {  // a filter's own errno, or a security module's denial under a filter
    b.cause = "io_uring_setup failed with " + errno_text(err) +
              ", an error neither container runtimes' seccomp profiles nor kernel.io_uring_disabled give: "
              "a seccomp filter installed on this process "
              "(/proc/self/status: Seccomp: 2) with its own errno, or a Linux security module (SELinux io_uring "
              "class, AppArmor)";
    b.fix =
        "find which denies it: the seccomp profile's rule for io_uring_setup, or the security module's audit "
        "log; allow io_uring_setup, io_uring_enter and io_uring_register, or run with the epoll backend "
        "(RINGIO_BACKEND=epoll)";
    return b;
  }
  b.cause = "permission denied (" + errno_text(err) +
            ") with kernel.io_uring_disabled = " + std::to_string(disabled.value_or(0)) +
            " and no seccomp filter: a Linux security module (SELinux io_uring class, AppArmor) may deny it";
  b.fix = "check the security module's audit log for io_uring denials and allow them";
  return b;
}

}  // namespace

blocker explain(std::error_code code, const std::string& error) {
  blocker b;
  b.error = error;
  const int err = code.category() == std::system_category() ? code.value() : 0;
  const bool at_setup = error.find("io_uring_setup") != std::string::npos;
  if (error.find("kernel lacks") != std::string::npos) {
    b.kind = "missing_feature";
    b.cause = "the kernel's io_uring lacks an opcode or feature ringio needs";
    b.fix = "run a newer kernel (ringio's io_uring backend needs Linux 5.19 or later), or the epoll backend";
  } else if (at_setup && (err == EPERM || err == EACCES)) {
    b = permission(std::move(b), err);
  } else if (err == ENOSYS || (err == EPERM && seccomp_filtered())) {
    if (seccomp_filtered()) {
      b.kind = "seccomp";
      b.cause = seccomp_cause(err);
      b.fix = profile_hint;
    } else {
      b.kind = "not_built";
      b.cause = "the kernel has no io_uring (built without CONFIG_IO_URING)";
      b.fix = "run a kernel built with CONFIG_IO_URING=y, or the epoll backend (RINGIO_BACKEND=epoll)";
    }
  } else if (at_setup && err == ENOMEM) {
    rlimit lim{};
    ::getrlimit(RLIMIT_MEMLOCK, &lim);
    b.kind = "memlock";
    b.cause = "io_uring_setup ran out of locked memory: kernels before 5.12 charge rings to RLIMIT_MEMLOCK (soft " +
              (lim.rlim_cur == RLIM_INFINITY ? std::string("unlimited") : std::to_string(lim.rlim_cur)) + " bytes)";
    b.fix =
        "raise RLIMIT_MEMLOCK (ulimit -l, systemd LimitMEMLOCK=, docker --ulimit memlock=-1), or pass "
        "smaller sq_entries/cq_entries in io_context_options";
  } else {
    b.kind = "other";
    b.cause = "io_uring failed to start for a reason the doctor does not recognise" +
              (err != 0 ? " (" + errno_text(err) + ")" : std::string());
    b.fix = "see the error; the epoll backend (RINGIO_BACKEND=epoll) needs no io_uring";
  }
  return b;
}

}  // namespace ringio::doctor::detail
