// SPDX-License-Identifier: Apache-2.0
// Must not compile: exec::when_any of senders whose values differ. The build stops
// with one static_assert that says what to use instead (tests/CMakeLists.txt checks).
#include <string>

#include "ringio/exec.hpp"

ringio::task<void> differing_values() {
  auto r = co_await ringio::exec::when_any(ringio::exec::just(1), ringio::exec::just(std::string("one")));
  (void)r;
}
