// SPDX-License-Identifier: Apache-2.0
// ringio/process/spawn_options.hpp — how process::spawn starts a child.
#pragma once

#include <string>
#include <vector>

#include "ringio/process/stdio.hpp"

namespace ringio::process {

/// How process::spawn starts a child. The defaults run argv[0] found through PATH with
/// the parent's environment, working directory and standard streams.
struct spawn_options {
  /// The child's standard input: inherit, /dev/null, or a pipe written through child::in.
  stdio in = stdio::inherit;
  /// The child's standard output: inherit, /dev/null, or a pipe read through child::out.
  stdio out = stdio::inherit;
  /// The child's standard error: inherit, /dev/null, or a pipe read through child::err.
  stdio err = stdio::inherit;
  /// "NAME=value" entries added to the environment, replacing a variable of the same
  /// name; an entry without '=' removes that variable.
  std::vector<std::string> env;
  /// Start from an empty environment instead of the parent's (then only `env`).
  bool clear_env = false;
  /// The child's working directory; empty: the parent's.
  std::string working_directory;
  /// Look argv[0] up in PATH when it has no '/' (as execvp does); false: run it as given.
  bool search_path = true;
  /// Put the child in a process group of its own (its id is the child's pid), so that a
  /// terminal's Ctrl-C does not reach it and child::kill_group reaches its descendants.
  bool new_process_group = false;
};

}  // namespace ringio::process
