// SPDX-License-Identifier: Apache-2.0
// A user's Debug build (-O0, no sibling-call optimisation): a loop of 100,000 co_awaits
// of tasks that complete at once, and 100,000 of a task that awaits such a task, must
// run in a constant amount of stack.
#include <cstdio>
#include <ringio/ringio.hpp>

using namespace ringio;

namespace {

task<int> at_once(int i) { co_return i; }
task<int> one_level(int i) { co_return co_await at_once(i) + 1; }

task<long> loop(int rounds) {
  long sum = 0;
  for (int i = 0; i < rounds; ++i) sum += co_await at_once(i);
  for (int i = 0; i < rounds; ++i) sum += co_await one_level(i);
  co_return sum;
}

}  // namespace

int main() {
  constexpr int rounds = 100'000;
  io_context ctx;
  const long sum = sync_wait(ctx, loop(rounds));
  const long expected = 2L * rounds * (rounds - 1) / 2 + rounds;
  std::printf("inline awaits: %d + %d rounds, %s\n", rounds, rounds, sum == expected ? "ok" : "FAILED");
  return sum == expected ? 0 : 1;
}
