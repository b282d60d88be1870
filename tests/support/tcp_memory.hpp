// SPDX-License-Identifier: Apache-2.0
// tcp_memory — what the kernel says about the host's TCP memory. It is shared with every
// other process: when something else exhausts it, the kernel turns a close with queued
// bytes into a reset (TCPAbortOnMemory), and while TCP is under memory pressure it
// drops segments that do not fit the shrunken buffers, so loopback data arrives only
// after retransmission timeouts that back off for seconds (TCPMemoryPressures). A test
// that sees an unexpected reset or stall checks these counters and reports the
// environment instead of failing ringio.
#pragma once

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

namespace ringio_test {

/// The TcpExt counter `name` of /proc/net/netstat, or 0 when it cannot be read.
inline std::uint64_t tcp_ext_counter(const std::string& name) {
  std::ifstream in("/proc/net/netstat");
  std::string names, values;
  while (std::getline(in, names) && std::getline(in, values)) {
    if (names.rfind("TcpExt:", 0) != 0) continue;
    std::istringstream n(names), v(values);
    std::string field, value;
    while (n >> field && v >> value)
      if (field == name) return std::stoull(value);
  }
  return 0;
}

/// TCPAbortOnMemory: connections the kernel reset for want of TCP memory.
inline std::uint64_t tcp_aborts_on_memory() { return tcp_ext_counter("TCPAbortOnMemory"); }

/// The host's TCP memory in pages (/proc/net/sockstat "TCP: ... mem N") and the
/// pressure threshold (the middle figure of net.ipv4.tcp_mem); 0 when unreadable.
inline std::uint64_t tcp_memory_pages() {
  std::ifstream in("/proc/net/sockstat");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("TCP:", 0) != 0) continue;
    auto at = line.rfind("mem ");
    return at == std::string::npos ? 0 : std::stoull(line.substr(at + 4));
  }
  return 0;
}
inline std::uint64_t tcp_pressure_threshold_pages() {
  std::ifstream in("/proc/sys/net/ipv4/tcp_mem");
  std::uint64_t low = 0, pressure = 0;
  in >> low >> pressure;
  return pressure;
}

/// Snapshots the counters at construction; `troubled()` says whether, since then, TCP
/// entered memory pressure, reset a connection for want of memory, or is over the
/// pressure threshold now; `describe()` puts it in words for a skip message.
class tcp_memory_watch {
 public:
  tcp_memory_watch()
      : pressures_(tcp_ext_counter("TCPMemoryPressures")),
        pressure_ms_(tcp_ext_counter("TCPMemoryPressuresChrono")),
        aborts_(tcp_aborts_on_memory()) {}
  [[nodiscard]] bool troubled() const {
    const std::uint64_t threshold = tcp_pressure_threshold_pages();
    return tcp_ext_counter("TCPMemoryPressures") != pressures_ ||
           tcp_ext_counter("TCPMemoryPressuresChrono") != pressure_ms_ || tcp_aborts_on_memory() != aborts_ ||
           (threshold != 0 && tcp_memory_pages() >= threshold);
  }
  [[nodiscard]] std::string describe() const {
    return "the host's TCP memory was under pressure (TCPMemoryPressures +" +
           std::to_string(tcp_ext_counter("TCPMemoryPressures") - pressures_) + ", " +
           std::to_string(tcp_ext_counter("TCPMemoryPressuresChrono") - pressure_ms_) +
           " ms under pressure, TCPAbortOnMemory +" + std::to_string(tcp_aborts_on_memory() - aborts_) + ", " +
           std::to_string(tcp_memory_pages()) + " pages in use of a threshold of " +
           std::to_string(tcp_pressure_threshold_pages()) + "): not ringio's doing";
  }

 private:
  std::uint64_t pressures_, pressure_ms_, aborts_;
};

}  // namespace ringio_test
