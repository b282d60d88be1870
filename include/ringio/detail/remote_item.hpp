// SPDX-License-Identifier: Apache-2.0
// ringio/detail/remote_item.hpp — a node pushed from any thread onto a loop's lock-free
// inbox and run later on the loop's own thread.
#pragma once

namespace ringio {
class io_context;
}

namespace ringio::detail {

struct remote_item {
  remote_item* next = nullptr;
  void (*run)(remote_item& self, io_context& ctx) noexcept = nullptr;
  void* arg = nullptr;
};

}  // namespace ringio::detail
