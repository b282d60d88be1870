// SPDX-License-Identifier: Apache-2.0
#include "top/process_cpu.hpp"

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace top {
namespace {

// Inodes of the sockets listening on `port` in /proc/net/tcp or tcp6.
void listening_inodes(const char* table, std::uint16_t port, std::set<std::string>& inodes) {
  std::ifstream in(table);
  std::string line;
  std::getline(in, line);  // the heading
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
    fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode;
    if (state != "0A") continue;  // TCP_LISTEN
    auto colon = local.rfind(':');
    if (colon == std::string::npos) continue;
    if (std::strtoul(local.c_str() + colon + 1, nullptr, 16) == port && inode != "0") inodes.insert(inode);
  }
}

bool holds_socket(const std::string& pid_dir, const std::set<std::string>& inodes) {
  const std::string fd_dir = pid_dir + "/fd";
  DIR* d = ::opendir(fd_dir.c_str());
  if (d == nullptr) return false;
  bool found = false;
  while (dirent* e = ::readdir(d)) {
    char target[128];
    const std::string path = fd_dir + "/" + e->d_name;
    ssize_t n = ::readlink(path.c_str(), target, sizeof target - 1);
    if (n <= 0) continue;
    std::string link(target, static_cast<std::size_t>(n));
    if (link.starts_with("socket:[") && inodes.count(link.substr(8, link.size() - 9)) != 0) {
      found = true;
      break;
    }
  }
  ::closedir(d);
  return found;
}

}  // namespace

std::optional<pid_t> find_listener(std::uint16_t port) {
  std::set<std::string> inodes;
  listening_inodes("/proc/net/tcp", port, inodes);
  listening_inodes("/proc/net/tcp6", port, inodes);
  if (inodes.empty()) return std::nullopt;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return std::nullopt;
  std::optional<pid_t> pid;
  while (dirent* e = ::readdir(proc)) {
    char* end = nullptr;
    long n = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || n <= 0) continue;
    if (holds_socket(std::string("/proc/") + e->d_name, inodes)) {
      pid = static_cast<pid_t>(n);
      break;
    }
  }
  ::closedir(proc);
  return pid;
}

std::optional<double> process_cpu_seconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return std::nullopt;
  auto paren = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (paren == std::string::npos) return std::nullopt;
  std::istringstream fields(stat.substr(paren + 1));
  std::string skip;
  for (int i = 3; i <= 13; ++i) fields >> skip;  // state .. cmajflt
  unsigned long long utime = 0, stime = 0;
  if (!(fields >> utime >> stime)) return std::nullopt;
  const long ticks = ::sysconf(_SC_CLK_TCK);
  return static_cast<double>(utime + stime) / static_cast<double>(ticks > 0 ? ticks : 100);
}

}  // namespace top
