// SPDX-License-Identifier: Apache-2.0
// ringio/sync.hpp — the synchronisation primitives for tasks in one include.
#pragma once

#include "ringio/sync/barrier.hpp"
#include "ringio/sync/event.hpp"
#include "ringio/sync/mutex.hpp"
#include "ringio/sync/semaphore.hpp"
#include "ringio/sync/wait_group.hpp"
