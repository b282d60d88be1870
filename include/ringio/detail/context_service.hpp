// SPDX-License-Identifier: Apache-2.0
// ringio/detail/context_service.hpp — an object that one io_context owns on behalf of a
// library module (a per-loop buffer pool, a per-loop cache): created on first use by
// io_context::service<T>(), destroyed by ~io_context once every task has finished and
// before the ring closes, so it may hold kernel resources of the ring.
#pragma once

namespace ringio::detail {

class context_service {
 public:
  context_service() = default;
  context_service(const context_service&) = delete;
  context_service& operator=(const context_service&) = delete;
  virtual ~context_service() = default;
};

}  // namespace ringio::detail
