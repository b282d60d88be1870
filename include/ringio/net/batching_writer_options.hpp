// SPDX-License-Identifier: Apache-2.0
// ringio/net/batching_writer_options.hpp — the bound of a batching_writer's queue and
// what happens to a message that does not fit it.
#pragma once

#include <cstddef>

namespace ringio {

/// What a batching_writer does with a message that does not fit its bound.
enum class overflow_policy {
  /// The oldest queued messages are discarded until the new one fits; dropped() counts
  /// them, and a writer given a gap notice sends one where they were. For readers that
  /// want the newest data (a chat room, a ticker): the producer never waits.
  drop_oldest,
  /// write() waits until the message fits (back-pressure: the producer goes at the
  /// reader's pace); try_write() refuses it with resource_unavailable_try_again.
  wait,
  /// The writer ends with std::errc::no_buffer_space: the queue is discarded, the send
  /// in flight is cancelled, and run() returns that error. Cuts a slow consumer off.
  fail,
};

/// The bound of a batching_writer: what may queue while a send is in flight. A message
/// always fits an empty queue, whatever its size. Name only what you change:
/// `{.max_messages = 256, .when_full = overflow_policy::drop_oldest}`.
struct batching_writer_options {
  /// Messages queued (not counting those in flight); 0 counts as 1.
  std::size_t max_messages = 1024;
  /// Bytes queued (not counting those in flight). One send also takes at most this
  /// many bytes (and at most 64 messages), so a writer holds at most twice this.
  std::size_t max_bytes = std::size_t{1} << 20;
  /// What happens when a message does not fit.
  overflow_policy when_full = overflow_policy::wait;
};

}  // namespace ringio
