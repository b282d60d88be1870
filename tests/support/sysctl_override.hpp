// SPDX-License-Identifier: Apache-2.0
// sysctl_override — sets a sysctl for a scope and restores the old value after. The
// setting is host-wide: an exclusive lock on a file beside it in /tmp keeps two test
// processes from interleaving (the second would read the first's value as the "old" one).
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace ringio_test {

class sysctl_override {
 public:
  sysctl_override(std::string path, const std::string& value) : path_(std::move(path)) {
    lock_ = ::open("/tmp/ringio-sysctl-test.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock_ < 0 || ::flock(lock_, LOCK_EX) != 0) return;
    std::ifstream in(path_);
    ok_ = static_cast<bool>(std::getline(in, old_)) && write(value);
  }
  ~sysctl_override() {
    if (ok_) write(old_);
    if (lock_ >= 0) ::close(lock_);  // releases the lock
  }
  sysctl_override(const sysctl_override&) = delete;
  sysctl_override& operator=(const sysctl_override&) = delete;

  /// The new value is in place (the old one is restored at the end of the scope).
  [[nodiscard]] bool ok() const { return ok_; }

 private:
  bool write(const std::string& v) const {
    std::ofstream out(path_);
    out << v << '\n';
    out.flush();
    return static_cast<bool>(out);
  }
  std::string path_;
  std::string old_;
  int lock_ = -1;
  bool ok_ = false;
};

}  // namespace ringio_test
