// SPDX-License-Identifier: Apache-2.0
// ringio/fiber.hpp — stackful fibers on the loop, in one include (docs/fibers.md).
#pragma once

#include "ringio/fiber/blocking_io.hpp"
#include "ringio/fiber/fiber_options.hpp"
#include "ringio/fiber/fiber_stack_pool.hpp"
#include "ringio/fiber/make_fiber.hpp"
#include "ringio/fiber/this_fiber.hpp"
