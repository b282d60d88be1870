// SPDX-License-Identifier: Apache-2.0
#include "ringio/doctor/diagnose.hpp"

#include <liburing.h>
#include <sys/utsname.h>

#include <cstdlib>
#include <string>
#include <system_error>

#include "backend/uring/uring_setup.hpp"
#include "core/backend_factory.hpp"
#include "doctor/blocker_diagnosis.hpp"
#include "doctor/server_limits.hpp"
#include "doctor/uring_features.hpp"
#include "ringio/io_context.hpp"

namespace ringio::doctor {
namespace {

// io_context's message for a forced backend that cannot start ends with the cause.
std::string cause_of(const std::string& what) {
  constexpr std::string_view marker = "cannot start: ";
  auto at = what.find(marker);
  return at == std::string::npos ? what : what.substr(at + marker.size());
}

// Starts the io_uring backend as an io_context does (forced, so a failure is an error
// instead of a fall-back); on success records the features from a ring made the same way.
void examine_uring(report& r) {
  try {
    io_context forced(io_context_options{.backend = backend_kind::uring, .quiet = true});
  } catch (const std::system_error& e) {
    r.blocker = detail::explain(e.code(), cause_of(e.what()));
    return;
  }
  io_uring ring{};
  try {
    const ringio::detail::ring_setup setup = ringio::detail::create_ring(ring, io_context_options{});
    io_uring_queue_exit(&ring);
    r.uring_usable = true;
    r.features = detail::probe_features(setup);
  } catch (const std::system_error& e) {
    r.blocker = detail::explain(e.code(), e.what());
  }
}

// The backend a default io_context picks in this process, and why.
void examine_choice(report& r) {
  const char* env = std::getenv("RINGIO_BACKEND");
  try {
    io_context ctx(io_context_options{.quiet = true});
    r.backend = ctx.backend();
    if (env != nullptr && *env != '\0')
      r.backend_reason = std::string("RINGIO_BACKEND=") + env + " in the environment: " + ctx.describe();
    else if (ctx.backend() == backend_kind::uring)
      r.backend_reason = "the default, and io_uring starts here: " + ctx.describe();
    else
      r.backend_reason = "io_uring cannot start (" + (r.blocker ? r.blocker->error : std::string("unknown")) +
                         "), so an io_context falls back to epoll";
  } catch (const std::exception& e) {
    r.backend_reason = std::string("an io_context cannot start: ") + e.what();
  }
}

}  // namespace

report diagnose() {
  report r;
  utsname u{};
  if (::uname(&u) == 0) r.kernel = u.release;
  examine_uring(r);
  examine_choice(r);
  r.limits = detail::read_limits();
  return r;
}

}  // namespace ringio::doctor
