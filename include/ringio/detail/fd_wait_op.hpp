// SPDX-License-Identifier: Apache-2.0
// ringio/detail/fd_wait_op.hpp — waits until a descriptor ringio does not own is
// readable or writable: IORING_OP_POLL_ADD on io_uring, the backend's readiness wait
// elsewhere. Nothing is read or written.
#pragma once

#include "ringio/detail/io_operation.hpp"

namespace ringio::detail {

extern const op_vtable fd_wait_vtable;

class fd_wait_op : public io_operation<fd_wait_op> {
 public:
  fd_wait_op(int descriptor, interest what) noexcept : io_operation(&fd_wait_vtable) {
    fd = descriptor;
    want = what;
  }
  /// Success once ready (an error or hang-up condition counts as ready: the next
  /// read or write reports it); bad_file_descriptor for a closed descriptor.
  result<void> get_result() noexcept { return void_result(*this); }
};

}  // namespace ringio::detail
