// SPDX-License-Identifier: Apache-2.0
#include "common/cli.hpp"

#include <sys/resource.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <iostream>

namespace apps {

cli::cli(int argc, char** argv, std::string usage, std::set<std::string> flags)
    : program_(argc > 0 ? argv[0] : "app"), usage_(std::move(usage)) {
  if (auto slash = program_.rfind('/'); slash != std::string::npos) program_ = program_.substr(slash + 1);
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::cout << usage_;
      std::exit(0);
    }
    if (a.size() > 2 && a.starts_with("--")) {
      std::string name = a.substr(2), value;
      if (auto eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
      } else if (flags.count(name) != 0) {
        seen_flags_.insert(name);
        continue;
      } else {
        if (i + 1 >= argc) {
          missing_value_.insert(name);  // reported by the getter, or as unknown by done()
          continue;
        }
        value = argv[++i];
      }
      if (flags.count(name) != 0) fail("option --" + name + " takes no value");
      if (options_.count(name) != 0) fail("option --" + name + " given twice");
      options_[name] = value;
    } else {
      positionals_.push_back(a);
    }
  }
}

void cli::fail(const std::string& message) const {
  std::cerr << program_ << ": " << message << "\n" << usage_;
  std::exit(2);
}

static std::optional<std::int64_t> parse_int(const std::string& s) {
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return v;
}

void cli::use(const std::string& name) {
  used_.insert(name);
  if (missing_value_.count(name) != 0) fail("option --" + name + " needs a value");
}

std::int64_t cli::integer(const std::string& name, std::int64_t fallback, std::int64_t min, std::int64_t max) {
  use(name);
  auto it = options_.find(name);
  if (it == options_.end()) return fallback;
  auto v = parse_int(it->second);
  if (!v || *v < min || *v > max)
    fail("--" + name + " must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "], got '" +
         it->second + "'");
  return *v;
}

std::int64_t cli::required_integer(const std::string& name, std::int64_t min, std::int64_t max) {
  use(name);
  if (options_.count(name) == 0) fail("missing --" + name);
  return integer(name, 0, min, max);
}

std::string cli::text(const std::string& name, const std::string& fallback) {
  use(name);
  auto it = options_.find(name);
  return it == options_.end() ? fallback : it->second;
}

double cli::seconds(const std::string& name, double fallback, double min, double max) {
  use(name);
  auto it = options_.find(name);
  if (it == options_.end()) return fallback;
  char* end = nullptr;
  double v = std::strtod(it->second.c_str(), &end);
  if (it->second.empty() || *end != '\0' || !(v >= min && v <= max))
    fail("--" + name + " must be a number of seconds in [" + std::to_string(min) + ", " + std::to_string(max) +
         "], got '" + it->second + "'");
  return v;
}

bool cli::flag(const std::string& name) {
  used_.insert(name);
  return seen_flags_.count(name) != 0;
}

std::int64_t cli::positional_integer(std::size_t i, const std::string& what, std::int64_t min, std::int64_t max) {
  if (i >= positionals_.size()) fail("missing <" + what + ">");
  auto v = parse_int(positionals_[i]);
  if (!v || *v < min || *v > max)
    fail("<" + what + "> must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "], got '" +
         positionals_[i] + "'");
  return *v;
}

double cli::positional_seconds(std::size_t i, const std::string& what, double min, double max) {
  if (i >= positionals_.size()) fail("missing <" + what + ">");
  char* end = nullptr;
  const double v = std::strtod(positionals_[i].c_str(), &end);
  if (positionals_[i].empty() || *end != '\0' || !(v >= min && v <= max))
    fail("<" + what + "> must be a number of seconds in [" + std::to_string(min) + ", " + std::to_string(max) +
         "], got '" + positionals_[i] + "'");
  return v;
}

std::string cli::positional_text(std::size_t i, const std::string& what) {
  if (i >= positionals_.size()) fail("missing <" + what + ">");
  return positionals_[i];
}

std::optional<ringio::backend_kind> cli::backend() {
  use("backend");
  auto it = options_.find("backend");
  if (it == options_.end()) return std::nullopt;
  auto k = ringio::parse_backend(it->second);
  if (!k) fail("unknown backend '" + it->second + "' (expected uring, epoll or uring-poll)");
  return k;
}

void cli::done(std::size_t positionals) {
  for (const auto& [name, value] : options_)
    if (used_.count(name) == 0) fail("unknown option --" + name);
  for (const auto& name : seen_flags_)
    if (used_.count(name) == 0) fail("unknown option --" + name);
  for (const auto& name : missing_value_)
    if (used_.count(name) == 0) fail("unknown option --" + name);
  if (positionals_.size() > positionals) fail("unexpected argument '" + positionals_[positionals] + "'");
}

void raise_fd_limit() {
  rlimit r;
  if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
  }
}

ringio::io_context_options context_options(std::optional<ringio::backend_kind> backend) {
  ringio::io_context_options o;
  o.backend = backend;
  // The apps keep a receive armed on every connection (pong and echo_server with
  // multishot receives hold one for the connection's life), and one thread may serve
  // 100,000 connections: a cap at the CQ size would starve the connections past it.
  // Completions beyond the CQ wait in the kernel's overflow list (IORING_FEAT_NODROP,
  // required at start-up) instead.
  o.max_in_flight = 1u << 20;
  return o;
}

}  // namespace apps
