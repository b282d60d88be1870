// SPDX-License-Identifier: Apache-2.0
// tcp_memory — the kernel's count of connections it aborted for lack of TCP memory
// (TcpExt TCPAbortOnMemory in /proc/net/netstat). The TCP memory of a host is shared
// with every other process: when something else exhausts it, the kernel turns a close
// with queued bytes into a reset. A test that sees an unexpected reset checks this
// counter and reports the environment instead of failing ringio.
#pragma once

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace ringio_test {

/// TCPAbortOnMemory, or 0 when /proc/net/netstat cannot be read.
inline std::uint64_t tcp_aborts_on_memory() {
  std::ifstream in("/proc/net/netstat");
  std::string names, values;
  while (std::getline(in, names) && std::getline(in, values)) {
    if (names.rfind("TcpExt:", 0) != 0) continue;
    std::istringstream n(names), v(values);
    std::string name, value;
    while (n >> name && v >> value)
      if (name == "TCPAbortOnMemory") return std::stoull(value);
  }
  return 0;
}

}  // namespace ringio_test
