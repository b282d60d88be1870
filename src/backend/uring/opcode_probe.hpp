// SPDX-License-Identifier: Apache-2.0
// opcode_probe — the opcodes the kernel listed when a ring was probed, for operations
// that choose their opcode when they are prepared (the kernel is the same for every
// ring of the process, so one process-wide record serves them all).
#pragma once

struct io_uring_probe;

namespace ringio::detail {

/// Records what `probe` lists (called by ring setup).
void note_supported_opcodes(const io_uring_probe* probe) noexcept;

/// Whether the kernel's probe listed opcode `op`; false before any ring was probed.
bool kernel_supports_opcode(int op) noexcept;

}  // namespace ringio::detail
