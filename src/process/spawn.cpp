// SPDX-License-Identifier: Apache-2.0
// Starting a child with posix_spawn (glibc reports exec failures to the caller), then
// holding it by a pidfd; running one to completion while collecting its output.
#include "ringio/process/spawn.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <string_view>
#include <vector>

#include "ringio/error.hpp"
#include "ringio/try_when_all.hpp"

extern char** environ;

namespace ringio::process {
namespace {

// The parent's environment (unless cleared) with the overrides applied.
std::vector<std::string> child_environment(const spawn_options& o) {
  std::vector<std::string> env;
  if (!o.clear_env)
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) env.emplace_back(*e);
  for (const std::string& entry : o.env) {
    const auto eq = entry.find('=');
    const std::string_view name = std::string_view(entry).substr(0, eq);
    std::erase_if(env, [&](const std::string& have) {
      return have.size() > name.size() && have[name.size()] == '=' && std::string_view(have).starts_with(name);
    });
    if (eq != std::string::npos) env.push_back(entry);
  }
  return env;
}

std::vector<char*> pointers(std::span<const std::string> strings) {
  std::vector<char*> p;
  p.reserve(strings.size() + 1);
  for (const std::string& s : strings) p.push_back(const_cast<char*>(s.c_str()));
  p.push_back(nullptr);
  return p;
}

// Closes what it holds unless released: the parent's ends and the child's ends.
struct pipe_pair {
  int fd[2] = {-1, -1};
  ~pipe_pair() {
    for (int f : fd)
      if (f >= 0) ::close(f);
  }
  int release(int i) { return std::exchange(fd[i], -1); }
};

struct spawn_attributes {
  posix_spawnattr_t attr;
  posix_spawn_file_actions_t actions;
  spawn_attributes() {
    ::posix_spawnattr_init(&attr);
    ::posix_spawn_file_actions_init(&actions);
  }
  ~spawn_attributes() {
    ::posix_spawn_file_actions_destroy(&actions);
    ::posix_spawnattr_destroy(&attr);
  }
};

// Every signal, glibc's two internal ones included. sigfillset leaves those out (and
// sigaddset refuses them), and posix_spawn then sets them to SIG_IGN in the child,
// where an ignored signal stays ignored across exec: set their bits directly.
sigset_t every_signal() noexcept {
  sigset_t s;
  ::sigfillset(&s);
#ifdef __GLIBC__
  constexpr int bits = 8 * sizeof(unsigned long);
  for (int sig = __SIGRTMIN; sig < SIGRTMIN; ++sig) s.__val[(sig - 1) / bits] |= 1UL << ((sig - 1) % bits);
#endif
  return s;
}

}  // namespace

// Lets spawn() fill in a child's private members.
class spawner {
 public:
  static void adopt(child& c, pid_t pid, int pidfd, bool own_group) {
    c.pid_ = pid;
    c.pidfd_ = detail::fd_handle(pidfd);
    c.own_group_ = own_group;
  }
};

result<child> spawn(std::span<const std::string> argv, const spawn_options& o) {
  if (argv.empty() || argv[0].empty()) return unexpected(errno_code(-EINVAL));
  const std::array<stdio, 3> modes{o.in, o.out, o.err};
  std::array<pipe_pair, 3> pipes;
  spawn_attributes sa;
  for (int target = 0; target < 3; ++target) {
    if (modes[target] == stdio::null) {
      int r =
          ::posix_spawn_file_actions_addopen(&sa.actions, target, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0);
      if (r != 0) return unexpected(errno_code(-r));
    } else if (modes[target] == stdio::pipe) {
      if (::pipe2(pipes[target].fd, O_CLOEXEC) < 0) return unexpected(errno_code(-errno));
      const int child_end = target == 0 ? pipes[target].fd[0] : pipes[target].fd[1];
      // dup2 onto 0/1/2 clears close-on-exec on the copy; the originals close at exec.
      int r = ::posix_spawn_file_actions_adddup2(&sa.actions, child_end, target);
      if (r != 0) return unexpected(errno_code(-r));
    }
  }
  if (!o.working_directory.empty()) {
    int r = ::posix_spawn_file_actions_addchdir_np(&sa.actions, o.working_directory.c_str());
    if (r != 0) return unexpected(errno_code(-r));
  }
  // Every signal at its default action and none blocked: a loop's signal_set blocks the
  // signals it takes, and SIGPIPE may be ignored here; a child must see neither.
  sigset_t all = every_signal(), none;
  ::sigemptyset(&none);
  ::posix_spawnattr_setsigdefault(&sa.attr, &all);
  ::posix_spawnattr_setsigmask(&sa.attr, &none);
  short flags = POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK;
  if (o.new_process_group) {
    flags |= POSIX_SPAWN_SETPGROUP;
    ::posix_spawnattr_setpgroup(&sa.attr, 0);
  }
  ::posix_spawnattr_setflags(&sa.attr, flags);

  const std::vector<std::string> env = child_environment(o);
  std::vector<char*> args = pointers(argv);
  std::vector<char*> envp = pointers(env);
  pid_t pid = -1;
  const int r = o.search_path ? ::posix_spawnp(&pid, args[0], &sa.actions, &sa.attr, args.data(), envp.data())
                              : ::posix_spawn(&pid, args[0], &sa.actions, &sa.attr, args.data(), envp.data());
  if (r != 0) return unexpected(errno_code(-r));

  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) {
    const int e = errno;
    ::kill(pid, SIGKILL);  // without a pidfd it cannot be held: do not leave it running
    siginfo_t info{};
    ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED);
    return unexpected(errno_code(-e));
  }
  child c;
  spawner::adopt(c, pid, pidfd, o.new_process_group);
  if (modes[0] == stdio::pipe) c.in = pipe_writer::from_descriptor(pipes[0].release(1));
  if (modes[1] == stdio::pipe) c.out = pipe_reader::from_descriptor(pipes[1].release(0));
  if (modes[2] == stdio::pipe) c.err = pipe_reader::from_descriptor(pipes[2].release(0));
  return c;  // the child's ends close here, in pipe_pair's destructors
}

namespace {

task<result<void>> feed(pipe_writer& in, std::string input) {
  auto sent = co_await in.write_all(const_buffer(input.data(), input.size()));
  (void)co_await in.close();
  if (!sent && sent.error() != std::errc::broken_pipe) co_return unexpected(sent.error());
  co_return result<void>{};  // a child that stops reading early is its own business
}

task<result<void>> nothing_to_feed() { co_return result<void>{}; }

}  // namespace

task<result<output_result>> output(std::vector<std::string> argv, std::string input, std::size_t max_bytes) {
  spawn_options o;
  o.in = input.empty() ? stdio::null : stdio::pipe;
  o.out = stdio::pipe;
  o.err = stdio::pipe;
  auto c = spawn(argv, o);
  if (!c) co_return unexpected(c.error());
  task<result<void>> writing = nothing_to_feed();
  if (!input.empty()) writing = feed(c->in, std::move(input));
  task<result<std::string>> reading_out = c->out.read_to_end(max_bytes);
  task<result<std::string>> reading_err = c->err.read_to_end(max_bytes);
  // The first failure (a stream past max_bytes, a stop) stops the others: the child
  // may be blocked writing the stream nobody reads any more.
  auto streams = co_await try_when_all(std::move(writing), std::move(reading_out), std::move(reading_err));
  if (!streams) co_return unexpected(streams.error());  // the child dies with `c`
  auto& [fed, out, err] = *streams;
  (void)fed;
  auto status = co_await c->wait();
  if (!status) co_return unexpected(status.error());
  co_return output_result{.status = *status, .out = std::move(out), .err = std::move(err)};
}

task<result<output_result>> output(std::vector<std::string> argv, std::string input) {
  return output(std::move(argv), std::move(input), 16 * 1024 * 1024);
}

task<result<output_result>> output(std::vector<std::string> argv) {
  return output(std::move(argv), std::string(), 16 * 1024 * 1024);
}

}  // namespace ringio::process
