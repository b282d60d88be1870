// SPDX-License-Identifier: Apache-2.0
// uring_features — asking the kernel, feature by feature, what io_uring offers.
#pragma once

#include <vector>

#include "backend/uring/uring_setup.hpp"
#include "ringio/doctor/feature.hpp"

namespace ringio::doctor::detail {

/// The features, from `setup` (a ring made by create_ring with an io_context's default
/// options) and from a small ring of the doctor's own: the opcode probe, setup flags,
/// registrations and multishot requests the kernel keeps or refuses.
std::vector<feature> probe_features(const ringio::detail::ring_setup& setup);

}  // namespace ringio::doctor::detail
