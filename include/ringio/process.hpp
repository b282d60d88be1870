// SPDX-License-Identifier: Apache-2.0
// ringio/process.hpp — child processes: spawn, pipes as streams, wait, kill.
#pragma once

#include "ringio/process/child.hpp"
#include "ringio/process/exit_status.hpp"
#include "ringio/process/pipe_reader.hpp"
#include "ringio/process/pipe_writer.hpp"
#include "ringio/process/spawn.hpp"
#include "ringio/process/spawn_options.hpp"
#include "ringio/process/stdio.hpp"
