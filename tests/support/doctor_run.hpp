// SPDX-License-Identifier: Apache-2.0
// doctor_run — runs ringio-doctor (DOCTOR_PATH) in a confined child and reads its report.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "support/confined_process.hpp"
#include "support/json_value.hpp"

namespace ringio_test {

inline constexpr const char* doctor = DOCTOR_PATH;

struct doctor_run {
  int status = -1;
  std::string out;
  std::string err;
};

template <class Setup>
inline doctor_run run_doctor(std::vector<std::string> args, Setup setup) {
  args.insert(args.begin(), doctor);
  confined_process p(std::move(args), setup);
  doctor_run r;
  r.status = p.wait(std::chrono::seconds(20)).value_or(-1);
  r.out = p.stdout_text();
  r.err = p.stderr_text();
  return r;
}

inline doctor_run run_doctor(std::vector<std::string> args) {
  return run_doctor(std::move(args), [] { return true; });
}

// The --json report of a run, parsed (a failed parse fails the test).
inline json_value json_of(const doctor_run& r) {
  auto v = json_value::parse(r.out);
  EXPECT_TRUE(v.has_value()) << "not JSON:\n" << r.out << r.err;
  return v.value_or(json_value{});
}

inline std::string text_at(const json_value& v, const char* key) {
  const json_value* m = v.get(key);
  return m == nullptr ? "<absent>" : m->text;
}

// The host must run io_uring for a test to show what takes it away.
inline bool uring_usable_here() { return run_doctor({}).status == 0; }

}  // namespace ringio_test
