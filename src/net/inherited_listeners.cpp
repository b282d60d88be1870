// SPDX-License-Identifier: Apache-2.0
#include "ringio/net/inherited_listeners.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <system_error>

namespace ringio {
namespace {

// The first descriptor of socket activation (SD_LISTEN_FDS_START).
constexpr int first_fd = 3;

// A positive decimal number with nothing around it.
std::optional<long long> positive_number(const char* text) {
  if (text == nullptr) return std::nullopt;
  std::string_view s(text);
  long long v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || s.empty() || v <= 0) return std::nullopt;
  return v;
}

// Removes the variables when asked, however the caller's function returns.
struct environment_cleanup {
  bool active;
  ~environment_cleanup() {
    if (!active) return;
    ::unsetenv("LISTEN_PID");
    ::unsetenv("LISTEN_FDS");
    ::unsetenv("LISTEN_FDNAMES");
  }
};

result<std::vector<std::string>> names_of(const char* text, long long count) {
  std::vector<std::string> names;
  if (text == nullptr) {
    names.assign(static_cast<std::size_t>(count), "unknown");
    return names;
  }
  std::string_view rest(text);
  for (;;) {
    auto colon = rest.find(':');
    std::string_view name = rest.substr(0, colon);
    if (name.empty()) return unexpected(errc::invalid_listen_fds);
    names.emplace_back(name);
    if (colon == std::string_view::npos) break;
    rest.remove_prefix(colon + 1);
  }
  if (static_cast<long long>(names.size()) != count) return unexpected(errc::invalid_listen_fds);
  return names;
}

// The descriptor is open and a listening stream socket (checked before any is taken).
std::error_code check_listener(int fd) {
  if (::fcntl(fd, F_GETFD) < 0) return std::make_error_code(std::errc::bad_file_descriptor);
  int type = 0;
  int listening = 0;
  socklen_t len = sizeof type;
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0) return errc::not_a_listener;
  len = sizeof listening;
  if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) < 0) return errc::not_a_listener;
  if (type != SOCK_STREAM || listening == 0) return errc::not_a_listener;
  return {};
}

}  // namespace

result<std::vector<inherited_listener>> listeners_from_environment(bool unset_environment) {
  environment_cleanup cleanup{unset_environment};
  const char* pid_text = std::getenv("LISTEN_PID");
  if (pid_text == nullptr) return std::vector<inherited_listener>{};
  auto pid = positive_number(pid_text);
  if (!pid) return unexpected(errc::invalid_listen_fds);
  if (*pid != static_cast<long long>(::getpid())) return std::vector<inherited_listener>{};
  auto count = positive_number(std::getenv("LISTEN_FDS"));
  if (!count) return unexpected(errc::invalid_listen_fds);
  rlimit limit{};
  const long long max_fd = ::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY
                               ? static_cast<long long>(limit.rlim_cur)
                               : 1LL << 20;
  if (*count > max_fd - first_fd) return unexpected(errc::invalid_listen_fds);
  auto names = names_of(std::getenv("LISTEN_FDNAMES"), *count);
  if (!names) return unexpected(names.error());
  for (long long i = 0; i < *count; ++i)
    if (auto ec = check_listener(first_fd + static_cast<int>(i))) return unexpected(ec);
  std::vector<inherited_listener> out;
  for (long long i = 0; i < *count; ++i) {
    auto l = stream_listener::adopt(first_fd + static_cast<int>(i));
    if (!l) return unexpected(l.error());  // (checked above; the adopted ones close)
    out.push_back({std::move((*names)[static_cast<std::size_t>(i)]), std::move(*l)});
  }
  return out;
}

}  // namespace ringio
