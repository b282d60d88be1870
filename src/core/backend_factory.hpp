// backend_factory — constructors of the concrete backends. They throw
// backend_setup_error when the host cannot run them; the message names the reason.
#pragma once

#include <memory>
#include <system_error>

#include "core/backend.hpp"
#include "ringio/io_context.hpp"

namespace ringio::detail {

class loop_state;

class backend_setup_error : public std::system_error {
 public:
  using std::system_error::system_error;
};

std::unique_ptr<backend> make_uring_backend(io_context& ctx, loop_state& st,
                                            const io_context_options& opts, bool poll_mode);
std::unique_ptr<backend> make_epoll_backend(io_context& ctx, loop_state& st,
                                            const io_context_options& opts);

}  // namespace ringio::detail
