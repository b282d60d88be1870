// SPDX-License-Identifier: Apache-2.0
// cli — the command-line conventions every ringio app shares: `--name value` or
// `--name=value` options, flags, positional arguments, `--help` (usage, exit 0) and
// usage errors (message + usage on stderr, exit 2).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ringio/backend_kind.hpp"
#include "ringio/io_context.hpp"

namespace apps {

class cli {
 public:
  /// `flags` are the options that take no value.
  cli(int argc, char** argv, std::string usage, std::set<std::string> flags = {});

  /// An integer option within [min, max].
  std::int64_t integer(const std::string& name, std::int64_t fallback, std::int64_t min, std::int64_t max);
  /// A required integer option.
  std::int64_t required_integer(const std::string& name, std::int64_t min, std::int64_t max);
  std::string text(const std::string& name, const std::string& fallback);
  /// A duration in seconds ("10", "2.5").
  double seconds(const std::string& name, double fallback, double min, double max);
  bool flag(const std::string& name);
  /// The i-th positional argument as an integer within [min, max] (required).
  std::int64_t positional_integer(std::size_t i, const std::string& what, std::int64_t min, std::int64_t max);
  /// The i-th positional argument as seconds ("10", "0.25") within [min, max] (required).
  double positional_seconds(std::size_t i, const std::string& what, double min, double max);
  /// The i-th positional argument (required).
  std::string positional_text(std::size_t i, const std::string& what);
  /// `--backend uring|epoll|uring-poll`; nullopt when absent (RINGIO_BACKEND or the default).
  std::optional<ringio::backend_kind> backend();
  /// Call after reading every option: rejects unknown options and extra positionals.
  void done(std::size_t positionals = 0);

  /// Prints `message` and the usage to stderr and exits with status 2.
  [[noreturn]] void fail(const std::string& message) const;

 private:
  std::string program_;
  std::string usage_;
  std::map<std::string, std::string> options_;
  void use(const std::string& name);

  std::set<std::string> seen_flags_;
  std::set<std::string> missing_value_;
  std::set<std::string> used_;
  std::vector<std::string> positionals_;
};

/// Raises RLIMIT_NOFILE's soft limit to its hard limit (servers hold many sockets).
void raise_fd_limit();

/// Options for an io_context on `backend` (nullopt: environment/default).
ringio::io_context_options context_options(std::optional<ringio::backend_kind> backend);

}  // namespace apps
