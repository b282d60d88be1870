// SPDX-License-Identifier: Apache-2.0
// sim_host — one machine of a simulated world: its address, its program, the stack the
// program runs on, and what the world's scheduler knows of it between two turns.
#pragma once

#include <poll.h>

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ringio/detail/resume_loop.hpp"
#include "ringio/net/socket_address.hpp"
#include "ringio/task.hpp"
#include "sim/host_fiber.hpp"

namespace ringio {
class io_context;
class scope;
}  // namespace ringio

namespace ringio::detail {

class promise_base;

struct sim_host {
  std::string name;
  socket_address address;
  std::function<task<void>(io_context&)> program;
  bool client = false;   // the world runs until every client's program has returned
  std::uint32_t id = 0;  // the network's owner id of its sockets (1, 2, ...)
  std::unique_ptr<host_fiber> fiber;
  scope* tasks = nullptr;    // the program's scope while it runs
  std::exception_ptr error;  // what the program threw
  // The program has returned; its io_context lives on (other hosts may still post to
  // it or set an event it waited on) until every host is done and run() releases it.
  bool program_done = false;
  bool released = false;
  bool shut_down = false;    // its context has cancelled and drained everything
  bool may_destroy = false;  // every host's has: the contexts are freed
  bool done_noted = false;

  // Between turns (set by the host's loop when it hands the turn back).
  bool worked = false;           // it did something in its last turn
  bool idle = false;             // it found nothing to do
  std::int64_t next_at = 0;      // when idle: its next timer (0: none)
  bool waits_real = false;       // when idle: it waits on something outside the world
  std::vector<pollfd> real_fds;  // when idle: the real descriptors it waits on, its wake-up eventfd first
  bool stop_asked = false;       // the clients are done: stop the program
  bool stop_sent = false;
  bool deadlock = false;  // nothing can happen anywhere: fail what waits

  // The thread's loop state while another stack runs.
  io_context* current = nullptr;
  promise_base* running_task = nullptr;
  resume_loop_state resume{};
};

}  // namespace ringio::detail
