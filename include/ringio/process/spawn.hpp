// SPDX-License-Identifier: Apache-2.0
// ringio/process/spawn.hpp — start a child process; run one and collect its output.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "ringio/process/child.hpp"
#include "ringio/process/exit_status.hpp"
#include "ringio/process/spawn_options.hpp"
#include "ringio/result.hpp"
#include "ringio/task.hpp"

namespace ringio::process {

/// Starts `argv[0]` with arguments `argv` (posix_spawn: safe in threaded programs, and
/// an exec failure such as no_such_file_or_directory or permission_denied comes back
/// here, not from the child). The child starts with every signal at its default action
/// and none blocked, and with no descriptor of the parent but 0, 1 and 2 (ringio opens
/// everything close-on-exec). Errors: invalid_argument for an empty argv; the errno of
/// pipe2, posix_spawn or pidfd_open. Synchronous; needs no io_context until the child
/// is waited for or its pipes are used.
///
/// The program must not reap children it did not start itself with waitpid(-1) or
/// SIGCHLD set to SIG_IGN: either would take this child's status away.
result<child> spawn(std::span<const std::string> argv, const spawn_options& options = {});

/// What output() collected.
struct output_result {
  exit_status status;  ///< how the child ended
  std::string out;     ///< all it wrote to its standard output
  std::string err;     ///< all it wrote to its standard error
};

/// Runs `argv` with standard input from /dev/null (or `input` through a pipe when not
/// empty), collects its standard output and error (each up to `max_bytes`: past it,
/// message_too_long and the child is killed) and waits for it. A stop kills the child.
task<result<output_result>> output(std::vector<std::string> argv, std::string input, std::size_t max_bytes);
/// output(argv, input, 16 MiB).
task<result<output_result>> output(std::vector<std::string> argv, std::string input);
/// output(argv, "", 16 MiB): standard input from /dev/null.
task<result<output_result>> output(std::vector<std::string> argv);

}  // namespace ringio::process
