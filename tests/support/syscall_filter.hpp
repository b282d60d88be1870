// SPDX-License-Identifier: Apache-2.0
// syscall_filter — a seccomp BPF program that makes chosen system calls fail with an
// errno and allows every other, as a container runtime's profile does.
#pragma once

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>

#include <cstddef>
#include <vector>

namespace ringio_test {

class syscall_filter {
 public:
  /// Denies each syscall number in `denied` with `err` (EPERM, ENOSYS, ...).
  syscall_filter(const std::vector<long>& denied, int err) {
    add(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)));
    add(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0));
    add(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
    add(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)));
    for (long nr : denied) {
      add(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<unsigned>(nr), 0, 1));
      add(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (static_cast<unsigned>(err) & SECCOMP_RET_DATA)));
    }
    add(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  }

  /// Installs the filter on the calling thread for good (no new privileges first, so
  /// no capability is needed). Only system calls: safe between fork and exec.
  [[nodiscard]] bool install() const noexcept {
    sock_fprog prog{static_cast<unsigned short>(code_.size()), const_cast<sock_filter*>(code_.data())};
    return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
  }

 private:
  void add(sock_filter f) { code_.push_back(f); }
  std::vector<sock_filter> code_;
};

}  // namespace ringio_test
