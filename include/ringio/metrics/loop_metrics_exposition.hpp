// SPDX-License-Identifier: Apache-2.0
// ringio/metrics/loop_metrics_exposition.hpp — the loops' metrics as Prometheus
// families (ringio_loop_*, ringio_operations_*), one sample per loop (label loop="i").
#pragma once

#include <span>

#include "ringio/loop_metrics.hpp"
#include "ringio/metrics/prometheus_writer.hpp"

namespace ringio {

/// Writes every family of loop_metrics (docs/operations.md, "Metrics"), with one
/// sample per loop: `loops[i]` gets the label loop="i"; operation counters also carry
/// kind="io|timer|nop|event".
void write_loop_metrics(prometheus_writer& out, std::span<const loop_metrics> loops);

}  // namespace ringio
