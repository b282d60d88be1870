// SPDX-License-Identifier: Apache-2.0
// ringio/sim.hpp — deterministic simulation: sim::world (virtual time, a simulated TCP
// network, seeded faults) and sim::run_seeds (docs/simulation.md).
#pragma once

#include "ringio/sim/fault_model.hpp"
#include "ringio/sim/run_seeds.hpp"
#include "ringio/sim/world.hpp"
