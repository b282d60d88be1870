// SPDX-License-Identifier: Apache-2.0
#include "backend/uring/opcode_probe.hpp"

#include <liburing.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>

namespace ringio::detail {
namespace {

constexpr int words = 4;  // opcodes 0..255
std::atomic<std::uint64_t> supported[words];

// RINGIO_URING_HIDE_OPCODES="50,55": opcodes to treat as missing, so that the paths
// for older kernels run on this one too (the tests use it).
bool hidden(int op) noexcept {
  const char* list = std::getenv("RINGIO_URING_HIDE_OPCODES");
  while (list != nullptr && *list != '\0') {
    char* end = nullptr;
    const long v = std::strtol(list, &end, 10);
    if (end == list) break;
    if (v == op) return true;
    list = *end == ',' ? end + 1 : end;
  }
  return false;
}

}  // namespace

void note_supported_opcodes(const io_uring_probe* probe) noexcept {
  for (int op = 0; op < words * 64; ++op) {
    if (hidden(op)) continue;
    // io_uring_opcode_supported takes a non-const probe in liburing 2.3.
    if (io_uring_opcode_supported(const_cast<io_uring_probe*>(probe), op) != 0)
      supported[op / 64].fetch_or(std::uint64_t{1} << (op % 64), std::memory_order_relaxed);
  }
}

bool kernel_supports_opcode(int op) noexcept {
  if (op < 0 || op >= words * 64) return false;
  return (supported[op / 64].load(std::memory_order_relaxed) >> (op % 64) & 1) != 0;
}

}  // namespace ringio::detail
