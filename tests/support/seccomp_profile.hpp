// SPDX-License-Identifier: Apache-2.0
// seccomp_profile — reads a seccomp profile in the container runtimes' JSON syntax
// ({"syscalls": [{"names": [...], "action": "SCMP_ACT_ALLOW"}]}) and turns it into
// a filter for the io_uring syscalls: those it allows stay allowed, the others are
// denied with EPERM as the runtimes' default profiles deny them.
#pragma once

#include <sys/syscall.h>

#include <cerrno>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "support/json_value.hpp"
#include "support/syscall_filter.hpp"

namespace ringio_test {

/// The io_uring syscalls and their numbers.
inline const std::vector<std::pair<std::string, long>> io_uring_syscalls = {
    {"io_uring_setup", __NR_io_uring_setup},
    {"io_uring_enter", __NR_io_uring_enter},
    {"io_uring_register", __NR_io_uring_register},
};

/// The syscall names the profile at `path` allows (SCMP_ACT_ALLOW entries); nullopt
/// when the file is missing or not a profile.
inline std::optional<std::set<std::string>> allowed_syscalls(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  auto doc = json_value::parse(text.str());
  const json_value* rules = doc ? doc->get("syscalls") : nullptr;
  if (rules == nullptr || rules->kind != json_value::type::array) return std::nullopt;
  std::set<std::string> names;
  for (const json_value& rule : rules->items) {
    const json_value* action = rule.get("action");
    const json_value* list = rule.get("names");
    if (action == nullptr || list == nullptr || list->kind != json_value::type::array) return std::nullopt;
    if (action->text != "SCMP_ACT_ALLOW") continue;
    for (const json_value& n : list->items) names.insert(n.text);
  }
  return names;
}

/// Denies with EPERM every io_uring syscall not in `allowed`.
inline syscall_filter io_uring_filter(const std::set<std::string>& allowed) {
  std::vector<long> denied;
  for (const auto& [name, nr] : io_uring_syscalls)
    if (allowed.count(name) == 0) denied.push_back(nr);
  return syscall_filter(denied, EPERM);
}

}  // namespace ringio_test
