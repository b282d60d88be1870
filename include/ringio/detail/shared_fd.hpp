// SPDX-License-Identifier: Apache-2.0
// ringio/detail/shared_fd.hpp — a descriptor that several users of one loop hold open
// together (the open-file cache of http::static_files lends its descriptors to the
// responses being sent). The count is not atomic: every holder lives on the owner's
// loop thread. When the last holder lets go, the owner's `unused` function runs (it
// closes the descriptor and frees the state).
#pragma once

#include <cstdint>
#include <utility>

namespace ringio::detail {

/// What a shared_fd points to: the descriptor, its holders, and what runs after the last.
struct shared_fd_state {
  int fd = -1;
  std::uint32_t holders = 0;
  void (*unused)(shared_fd_state&) noexcept = nullptr;
};

/// One holder of a shared_fd_state (move-only; copy with share()).
class shared_fd {
 public:
  shared_fd() noexcept = default;
  explicit shared_fd(shared_fd_state& s) noexcept : s_(&s) { ++s.holders; }
  shared_fd(shared_fd&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  shared_fd& operator=(shared_fd&& o) noexcept {
    if (this != &o) {
      reset();
      s_ = std::exchange(o.s_, nullptr);
    }
    return *this;
  }
  shared_fd(const shared_fd&) = delete;
  shared_fd& operator=(const shared_fd&) = delete;
  ~shared_fd() { reset(); }

  /// Another holder of the same descriptor.
  [[nodiscard]] shared_fd share() const noexcept { return s_ != nullptr ? shared_fd(*s_) : shared_fd(); }
  /// The descriptor, or -1 when empty.
  [[nodiscard]] int get() const noexcept { return s_ != nullptr ? s_->fd : -1; }
  [[nodiscard]] bool valid() const noexcept { return s_ != nullptr; }
  [[nodiscard]] shared_fd_state* state() const noexcept { return s_; }
  /// Lets go (the last holder runs the state's `unused`).
  void reset() noexcept {
    if (shared_fd_state* s = std::exchange(s_, nullptr); s != nullptr && --s->holders == 0 && s->unused != nullptr)
      s->unused(*s);
  }

 private:
  shared_fd_state* s_ = nullptr;
};

}  // namespace ringio::detail
