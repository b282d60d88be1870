// SPDX-License-Identifier: Apache-2.0
// confined_process — runs a program in a forked child after a setup step of the test's
// choosing (a seccomp filter, an rlimit, another uid), capturing stdout and stderr.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace ringio_test {

class confined_process {
 public:
  /// Runs argv[0] with `argv`; `setup` runs in the child just before exec and must only
  /// make system calls (it runs after fork). A false return exits the child with 126.
  /// The program starts with stdin, stdout and stderr only: a descriptor the test runner
  /// leaves open must not change what an rlimit on descriptors leaves to it.
  template <class Setup>
  confined_process(std::vector<std::string> argv, Setup setup) {
    int out[2], err[2];
    if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) return;
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(out[1], 1);
      ::dup2(err[1], 2);
      ::close_range(3, ~0U, 0);
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      if (!setup()) ::_exit(126);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    ::close(out[1]);
    ::close(err[1]);
    out_ = out[0];
    err_ = err[0];
  }
  ~confined_process() {
    if (pid_ > 0 && !status_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (out_ >= 0) ::close(out_);
    if (err_ >= 0) ::close(err_);
  }
  confined_process(const confined_process&) = delete;
  confined_process& operator=(const confined_process&) = delete;

  void signal(int sig) const { ::kill(pid_, sig); }

  /// The next line of stdout, or nullopt after `timeout` or at end of output.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (auto nl = out_text_.find('\n', consumed_); nl != std::string::npos) {
        std::string line = out_text_.substr(consumed_, nl - consumed_);
        consumed_ = nl + 1;
        return line;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0 || !read_some(out_, out_text_, static_cast<int>(left.count()))) return std::nullopt;
    }
  }

  /// Waits for the exit, reading both outputs meanwhile: the exit status (128 + signal
  /// when killed), or nullopt if still running after `timeout`.
  std::optional<int> wait(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!status_) {
      while (read_some(out_, out_text_, 0)) {
      }
      while (read_some(err_, err_text_, 0)) {
      }
      int st = 0;
      if (::waitpid(pid_, &st, WNOHANG) == pid_) {
        status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        break;
      }
      if (std::chrono::steady_clock::now() > deadline) return std::nullopt;
      ::usleep(2000);
    }
    while (read_some(out_, out_text_, 0)) {
    }
    while (read_some(err_, err_text_, 0)) {
    }
    return status_;
  }

  /// All of stdout read so far (wait() reads the rest).
  [[nodiscard]] const std::string& stdout_text() const { return out_text_; }
  /// All of stderr read so far (wait() reads the rest).
  [[nodiscard]] const std::string& stderr_text() const { return err_text_; }

 private:
  // One read from `fd` into `into` if data comes within `ms`; false at EOF or timeout.
  static bool read_some(int fd, std::string& into, int ms) {
    pollfd p{fd, POLLIN, 0};
    int ready;
    while ((ready = ::poll(&p, 1, ms)) < 0 && errno == EINTR) {
    }
    if (ready <= 0) return false;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) < 0 && errno == EINTR) {
    }
    if (n <= 0) return false;
    into.append(buf, static_cast<std::size_t>(n));
    return true;
  }

  pid_t pid_ = -1;
  int out_ = -1, err_ = -1;
  std::string out_text_, err_text_;
  std::size_t consumed_ = 0;
  std::optional<int> status_;
};

}  // namespace ringio_test
