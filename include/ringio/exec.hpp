// SPDX-License-Identifier: Apache-2.0
// ringio/exec.hpp — the sender interface (P2300 / std::execution style), in one include.
// See docs/senders.md.
#pragma once

#include "ringio/exec/connect.hpp"
#include "ringio/exec/continues_on.hpp"
#include "ringio/exec/env.hpp"
#include "ringio/exec/fail_after.hpp"
#include "ringio/exec/from_task.hpp"
#include "ringio/exec/io_sender.hpp"
#include "ringio/exec/just.hpp"
#include "ringio/exec/let_value.hpp"
#include "ringio/exec/operations.hpp"
#include "ringio/exec/repeat_until.hpp"
#include "ringio/exec/scheduler.hpp"
#include "ringio/exec/sender_awaiter.hpp"
#include "ringio/exec/sender_traits.hpp"
#include "ringio/exec/starts_on.hpp"
#include "ringio/exec/sync_wait.hpp"
#include "ringio/exec/tags.hpp"
#include "ringio/exec/then.hpp"
#include "ringio/exec/when_all.hpp"
#include "ringio/exec/when_any.hpp"
#include "ringio/exec/yield_sender.hpp"
