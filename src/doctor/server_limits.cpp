// SPDX-License-Identifier: Apache-2.0
#include "doctor/server_limits.hpp"

#include <sched.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "doctor/proc_files.hpp"

namespace ringio::doctor::detail {
namespace {

// Below this many open files a server meets EMFILE under ordinary load.
constexpr rlim_t nofile_wanted = 65536;

std::string rlim_text(rlim_t v) { return v == RLIM_INFINITY ? "unlimited" : std::to_string(v); }

limit open_files() {
  rlimit r{};
  ::getrlimit(RLIMIT_NOFILE, &r);
  limit l{"RLIMIT_NOFILE", "soft " + rlim_text(r.rlim_cur) + ", hard " + rlim_text(r.rlim_max), ""};
  if (r.rlim_cur < nofile_wanted)
    l.warning = "at most " + rlim_text(r.rlim_cur) +
                " descriptors: connections beyond that fail with EMFILE; raise the soft limit (ulimit -n, "
                "systemd LimitNOFILE=, docker --ulimit nofile=) to " +
                std::to_string(nofile_wanted) + " or more" +
                (r.rlim_max < nofile_wanted ? " (the hard limit must be raised too)" : "");
  return l;
}

// Whether the running kernel is older than major.minor.
bool kernel_before(int major, int minor) {
  utsname u{};
  int k_major = 0, k_minor = 0;
  if (::uname(&u) != 0 || std::sscanf(u.release, "%d.%d", &k_major, &k_minor) != 2) return false;
  return k_major < major || (k_major == major && k_minor < minor);
}

// Kernels before 5.12 charge io_uring rings to RLIMIT_MEMLOCK; an io_context's default
// ring (4,096 SQEs, 65,536 CQEs) takes about 1.3 MiB.
limit locked_memory() {
  rlimit r{};
  ::getrlimit(RLIMIT_MEMLOCK, &r);
  limit l{"RLIMIT_MEMLOCK", "soft " + rlim_text(r.rlim_cur) + ", hard " + rlim_text(r.rlim_max) + " bytes", ""};
  constexpr rlim_t default_ring_bytes = 1536 * 1024;
  if (kernel_before(5, 12) && r.rlim_cur < default_ring_bytes * 4)
    l.warning =
        "this kernel (before 5.12) charges io_uring rings to RLIMIT_MEMLOCK and ringio's default ring "
        "takes about 1.3 MiB per loop: raise it (ulimit -l, LimitMEMLOCK=, docker --ulimit memlock=-1)";
  return l;
}

limit sysctl_number(const char* name, const char* path, long wanted, const char* why) {
  auto v = read_number(path);
  limit l{name, v ? std::to_string(*v) : "unreadable", ""};
  if (v && *v < wanted) l.warning = std::string(why) + " (raise to " + std::to_string(wanted) + " or more)";
  return l;
}

limit io_uring_sysctl(const char* name, const char* path) {
  auto v = read_text(path);
  return {name, v ? *v : "absent (kernel before 6.6)", ""};
}

// tcp_mem in pages ("min pressure max") and the pages TCP uses now (/proc/net/sockstat).
limit tcp_memory() {
  limit l{"net.ipv4.tcp_mem", "unreadable", ""};
  std::ifstream mem("/proc/sys/net/ipv4/tcp_mem");
  long low = 0, pressure = 0, high = 0;
  if (!(mem >> low >> pressure >> high)) return l;
  long used = -1;
  std::ifstream stat("/proc/net/sockstat");
  for (std::string line; std::getline(stat, line);) {
    if (line.rfind("TCP:", 0) != 0) continue;
    std::istringstream words(line);
    for (std::string w; words >> w;)
      if (w == "mem") words >> used;
  }
  l.value = "min " + std::to_string(low) + ", pressure " + std::to_string(pressure) + ", max " + std::to_string(high) +
            " pages; in use " + (used < 0 ? std::string("unknown") : std::to_string(used));
  if (used >= pressure)
    l.warning =
        "TCP is under memory pressure: socket buffers shrink and sends stall; raise tcp_mem or "
        "find what holds the memory";
  else if (used >= 0 && used * 4 >= pressure * 3) l.warning = "TCP memory use is near the pressure threshold";
  return l;
}

limit port_range() {
  limit l{"net.ipv4.ip_local_port_range", "unreadable", ""};
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  long low = 0, high = 0;
  if (!(in >> low >> high)) return l;
  const long ports = high - low + 1;
  l.value = std::to_string(low) + "-" + std::to_string(high) + " (" + std::to_string(ports) + " ports)";
  if (ports < 16384)
    l.warning = "few ephemeral ports: outgoing connections to one destination run out at " + std::to_string(ports) +
                " (widen net.ipv4.ip_local_port_range)";
  return l;
}

limit huge_pages() {
  auto v = read_text("/sys/kernel/mm/transparent_hugepage/enabled");
  limit l{"transparent_hugepage", v ? *v : "unavailable", ""};
  if (v && v->find("[always]") != std::string::npos)
    l.warning =
        "'always' may add latency spikes (khugepaged compaction) and memory bloat; 'madvise' is "
        "the usual choice for servers";
  return l;
}

limit cpus() {
  const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  cpu_set_t set;
  CPU_ZERO(&set);
  const int usable = ::sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : -1;
  std::string isolated = read_text("/sys/devices/system/cpu/isolated").value_or("");
  limit l{"CPUs",
          std::to_string(online) + " online, " + std::to_string(usable) +
              " usable by this process, isolated: " + (isolated.empty() ? "none" : isolated),
          ""};
  if (usable > 0 && usable < online)
    l.warning = "this process may run on " + std::to_string(usable) + " of " + std::to_string(online) +
                " CPUs (affinity or cpuset): size thread counts to " + std::to_string(usable);
  return l;
}

}  // namespace

std::vector<limit> read_limits() {
  return {
      open_files(),
      locked_memory(),
      io_uring_sysctl("kernel.io_uring_disabled", "/proc/sys/kernel/io_uring_disabled"),
      io_uring_sysctl("kernel.io_uring_group", "/proc/sys/kernel/io_uring_group"),
      sysctl_number("net.core.somaxconn", "/proc/sys/net/core/somaxconn", 4096,
                    "listen backlogs are capped here: bursts of connections are refused or retried"),
      tcp_memory(),
      port_range(),
      huge_pages(),
      cpus(),
  };
}

}  // namespace ringio::doctor::detail
