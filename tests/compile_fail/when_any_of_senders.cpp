// SPDX-License-Identifier: Apache-2.0
// Must not compile: ringio::when_any (of tasks and operations) given senders. The build
// stops with one static_assert naming exec::when_any (tests/CMakeLists.txt checks).
#include "ringio/exec.hpp"
#include "ringio/when_any.hpp"

ringio::task<void> senders_to_the_task_combinator() {
  auto r = co_await ringio::when_any(ringio::exec::just(1), ringio::exec::just(2));
  (void)r;
}
