// SPDX-License-Identifier: Apache-2.0
// ringio/blocking/blocking_pool_options.hpp — the size and queue bound of a
// blocking_pool.
#pragma once

#include <cstddef>

namespace ringio {

/// How large a blocking_pool may grow. Every field has a default.
struct blocking_pool_options {
  /// Most threads the pool runs at once (at least 1). Threads start on demand, one
  /// whenever work arrives and every started thread is busy, and stay until the pool
  /// is destroyed.
  unsigned threads = 4;
  /// Most functions waiting for a free thread (at least 1). A spawn_blocking() that
  /// finds the queue full completes at once with errc::queue_full; its function never
  /// runs.
  std::size_t queue_limit = 1024;
};

}  // namespace ringio
