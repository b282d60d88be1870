// SPDX-License-Identifier: Apache-2.0
// backend_factory — constructors of the concrete backends. They throw
// backend_setup_error when the host cannot run them; the message names the reason.
#pragma once

#include <memory>
#include <string>
#include <system_error>

#include "core/backend.hpp"
#include "ringio/io_context.hpp"

namespace ringio::detail {

class loop_state;

/// A system_error whose message is exactly `reason` (std::system_error would append
/// the code's text, which the reason already contains where it helps).
class backend_setup_error : public std::system_error {
 public:
  backend_setup_error(std::error_code ec, std::string reason) : std::system_error(ec), reason_(std::move(reason)) {}
  const char* what() const noexcept override { return reason_.c_str(); }

 private:
  std::string reason_;
};

std::unique_ptr<backend> make_uring_backend(io_context& ctx, loop_state& st, const io_context_options& opts,
                                            bool poll_mode);
std::unique_ptr<backend> make_epoll_backend(io_context& ctx, loop_state& st, const io_context_options& opts);
std::unique_ptr<backend> make_sim_backend(io_context& ctx, loop_state& st, const io_context_options& opts);

}  // namespace ringio::detail
