// SPDX-License-Identifier: Apache-2.0
// ringio/detail/blocking_home.hpp — the loop that blocking jobs report back to, shared
// by its jobs so that a job finishing after the loop is gone can tell.
#pragma once

#include <mutex>

namespace ringio {
class io_context;
}

namespace ringio::detail {

/// `ctx` becomes null (under `mu`) when the loop is destroyed; a job finishing after
/// that frees itself on its pool thread instead of posting to the loop.
struct blocking_home {
  std::mutex mu;
  io_context* ctx = nullptr;
};

}  // namespace ringio::detail
