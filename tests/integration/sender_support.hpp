// SPDX-License-Identifier: Apache-2.0
// sender_support — helpers of the sender tests: a sender adaptor that gives its child a
// chosen stop token, and blocking socket helpers for the peer side.
#pragma once

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <cerrno>
#include <stop_token>
#include <string>
#include <utility>

#include "ringio/exec.hpp"

namespace ringio_test {

// The child sees `token` as its environment's stop token (instead of the parent's).
template <class S>
struct with_token_sender {
  using sender_concept = ringio::exec::sender_t;
  using completion_signatures = ringio::exec::completion_signatures_of_t<S>;
  S s;
  std::stop_token token;

  template <class R>
  struct receiver {
    using receiver_concept = ringio::exec::receiver_t;
    R rcvr;
    std::stop_token token;
    template <class... A>
    void set_value(A&&... a) noexcept {
      std::move(rcvr).set_value(std::forward<A>(a)...);
    }
    template <class E>
    void set_error(E&& e) noexcept {
      std::move(rcvr).set_error(std::forward<E>(e));
    }
    void set_stopped() noexcept { std::move(rcvr).set_stopped(); }
    auto get_env() const noexcept { return ringio::exec::with_stop_token(ringio::exec::get_env(rcvr), token); }
  };

  template <class R>
  auto connect(R&& r) && {
    return ringio::exec::connect(std::move(s), receiver<std::decay_t<R>>{std::forward<R>(r), token});
  }
};

template <class S>
with_token_sender<std::decay_t<S>> with_token(S&& s, std::stop_token t) {
  return {std::forward<S>(s), std::move(t)};
}

// Blocking send of all of `text` on descriptor `fd` (test side).
inline void send_text(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::send(fd, text.data() + done, text.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    ASSERT_GT(n, 0);
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace ringio_test
