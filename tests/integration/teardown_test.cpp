// SPDX-License-Identifier: Apache-2.0
// Teardown at the earliest observable moment: for each type with a cross-thread
// method, the loop side destroys the object the instant it can observe that the other
// thread's call took effect, while that thread may still be inside the call. Both
// threads are pinned to one CPU, so the scheduler preempts them at arbitrary points;
// ASan (use after free) and TSan (races) turn a late access into a failure.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <memory>
#include <thread>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"

using namespace ringio;
using namespace ringio_test;

namespace {

// Pins the calling thread to one CPU for its lifetime, restoring the old mask after.
// `yielding`: the thread also runs under SCHED_IDLE, so the wake-up of the loop's
// thread (a normal one, on the same CPU) preempts it on the spot: right after the
// store that the woken side observes.
class pin_to_cpu {
 public:
  explicit pin_to_cpu(int cpu, bool yielding = false) {
    pthread_getaffinity_np(pthread_self(), sizeof old_, &old_);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    pthread_setaffinity_np(pthread_self(), sizeof one, &one);
    if (yielding) {
      sched_param none{};
      pthread_setschedparam(pthread_self(), SCHED_IDLE, &none);
    }
  }
  ~pin_to_cpu() { pthread_setaffinity_np(pthread_self(), sizeof old_, &old_); }
  pin_to_cpu(const pin_to_cpu&) = delete;
  pin_to_cpu& operator=(const pin_to_cpu&) = delete;

 private:
  cpu_set_t old_{};
};

int current_cpu() {
  int c = sched_getcpu();
  return c < 0 ? 0 : c;
}

class Teardown : public backend_test {
 protected:
  static constexpr int rounds = 300;
};

// The last sender handle, dropped on another thread, closes the channel; the receiver
// frees the channel as soon as it sees errc::closed.
TEST_P(Teardown, ChannelFreedWhenTheLastSenderHandleCloses) {
  const int cpu = current_cpu();
  pin_to_cpu pin(cpu);
  for (int round = 0; round < rounds; ++round) {
    auto ch = std::make_unique<channel<int>>(4);
    std::thread t([cpu, s = ch->make_sender(), round]() mutable {
      pin_to_cpu p(cpu, true);
      if (round % 2 == 0) s.try_send(round);
      // Mostly after the receiver went to sleep in the kernel: the wake-up then lets
      // the scheduler switch to it in the middle of the close.
      std::this_thread::sleep_for(std::chrono::microseconds(round % 4 * 300));
      auto last = std::move(s);  // destroyed at the end of this scope: closes
    });
    int got = 0;
    run([&]() -> task<void> {
      for (;;) {
        auto r = co_await ch->receive();
        if (!r) {
          EXPECT_EQ(r.error(), errc::closed);
          break;
        }
        ++got;
      }
      ch.reset();  // the earliest moment: every sender is gone
    }());
    t.join();
    EXPECT_EQ(got, round % 2 == 0 ? 1 : 0) << "round " << round;
  }
}

// close() from one thread while another thread's send is waiting on a full channel
// (or about to): the sender is woken and fails, or takes the slot a receive freed;
// nothing is lost or duplicated. Without handles, the channel goes once the sender
// has returned (the handle-based test above frees it at the first possible moment).
TEST_P(Teardown, ChannelCloseWakesAWaitingSenderOnAnotherLoop) {
  const int cpu = current_cpu();
  pin_to_cpu pin(cpu);
  for (int round = 0; round < rounds / 3; ++round) {
    auto ch = std::make_unique<channel<int>>(1);
    channel<int>* raw = ch.get();
    std::atomic<bool> sender_waiting{false};
    std::atomic<int> sent{0};
    std::thread t([cpu, raw, &sender_waiting, &sent] {
      pin_to_cpu p(cpu, true);
      io_context other(io_context_options{.quiet = true});
      sync_wait(other, [](channel<int>& c, std::atomic<bool>& waiting, std::atomic<int>& sent) -> task<void> {
        EXPECT_TRUE(c.try_send(1));
        waiting.store(true);
        // Waits (full), then either gets the slot the receiver frees or fails on close.
        auto r = co_await c.send(2);
        sent.store(r ? 2 : 1);
      }(*raw, sender_waiting, sent));
    });
    while (!sender_waiting.load()) std::this_thread::yield();
    int got = 0;
    run([&]() -> task<void> {
      (void)co_await sleep_for(std::chrono::microseconds(round % 7 * 50));
      ch->close();
      for (;;) {
        auto r = co_await ch->receive();
        if (!r) break;
        ++got;
      }
      // Without sender handles the channel may go once its senders have returned (the
      // sender's store below is its last step; the send itself touched nothing after
      // the receiver could see the channel closed and drained only if it finished).
      while (sent.load() == 0) (void)co_await sleep_for(std::chrono::microseconds(200));
      ch.reset();
    }());
    t.join();
    EXPECT_EQ(got, sent.load()) << "round " << round;
  }
}

// event::set() from another thread: the waiter frees the event as soon as it is
// released (or finds it set).
TEST_P(Teardown, EventFreedWhenSetFromAnotherThread) {
  const int cpu = current_cpu();
  pin_to_cpu pin(cpu);
  for (int round = 0; round < rounds; ++round) {
    auto ev = std::make_unique<event>(round % 2 == 0 ? event_mode::one_shot : event_mode::auto_reset);
    event* raw = ev.get();
    std::atomic<bool> go{false};
    std::thread t([cpu, raw, &go, round] {
      pin_to_cpu p(cpu, true);
      while (!go.load()) std::this_thread::yield();
      std::this_thread::sleep_for(std::chrono::microseconds(round % 4 * 300));
      raw->set();
    });
    run([&]() -> task<void> {
      go.store(true);
      auto r = co_await ev->wait();
      EXPECT_TRUE(r);
      ev.reset();
    }());
    t.join();
  }
}

RINGIO_ALL_BACKENDS(Teardown);

}  // namespace
