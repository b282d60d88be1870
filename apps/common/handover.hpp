// SPDX-License-Identifier: Apache-2.0
// handover — --handover-socket PATH, the restart protocol of the server apps. The
// running server listens on PATH (a Unix socket). A new process started with the same
// option connects, receives the listening sockets (SCM_RIGHTS), starts accepting on
// them, and sends "ready"; the old process then stops accepting, answers "draining" and
// drains; the new one renames its own socket over PATH for the next restart. The
// sockets never close in between, so no connection is refused (docs/operations.md).
#pragma once

#include <atomic>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "ringio/net/stream_listener.hpp"
#include "ringio/result.hpp"

namespace apps {

class handover {
 public:
  explicit handover(std::string path) : path_(std::move(path)) {}
  ~handover();
  handover(const handover&) = delete;
  handover& operator=(const handover&) = delete;

  /// Connects to a running server on the path and receives its listeners: an empty
  /// vector when none runs there (no socket, or nobody listening on it); an error when
  /// one answered but the handover failed (the old server goes on serving).
  ringio::result<std::vector<ringio::stream_listener>> take_over();

  /// Keeps duplicates of the descriptors of the listeners this process serves on, for
  /// a successor (before serving, which closes the listeners when it stops).
  void keep(const std::vector<int>& listeners);

  /// Once this process accepts on the listeners: tells the predecessor, if any, to
  /// stop accepting, then listens on the path for a successor. A successor that takes
  /// over requests `stop_serving`. Returns false (logged) when the path cannot be
  /// listened on.
  bool serve_successors(std::stop_source stop_serving);

  /// Whether this process took the listeners over from a predecessor.
  bool took_over() const { return took_over_; }

  /// Stops listening for successors (the drain began) and closes the duplicates; the
  /// path is removed unless a successor has it now. After a handover, late successors
  /// are still referred to the new process until it owns the path.
  void close();

 private:
  void run(std::stop_source stop_serving);
  bool answer(int client);
  void refer_to_successor();
  void stop();  // everything, the thread joined

  std::string path_;
  int predecessor_ = -1;        // connection to the old process while taking over
  int predecessor_exit_ = -1;   // its pidfd: readable once it exited
  int successor_exit_ = -1;     // the same for the process we handed over to
  int listener_ = -1;           // our Unix socket on path_
  int wake_[2] = {-1, -1};      // close() wakes the thread
  std::vector<int> listeners_;  // duplicates of the listening sockets, for a successor
  std::optional<std::thread> thread_;
  std::atomic<bool> handed_over_{false};
  bool took_over_ = false;        // from a predecessor
  unsigned long long inode_ = 0;  // of path_ once we listen on it
};

}  // namespace apps
