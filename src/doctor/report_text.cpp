// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <string>

#include "ringio/doctor/diagnose.hpp"
#include "ringio/version.hpp"

namespace ringio::doctor {
namespace {

std::string padded(std::string s, std::size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

}  // namespace

std::string to_text(const report& r) {
  std::string out = "ringio " + std::string(version().string) + " on Linux " + r.kernel + "\n";
  out += "backend: " + (r.backend ? std::string(to_string(*r.backend)) : std::string("none")) + "\n  " +
         r.backend_reason + "\n";
  out += std::string("io_uring (preferred backend): ") + (r.uring_usable ? "usable" : "NOT usable") + "\n";
  if (r.blocker) {
    out += "  blocker: " + r.blocker->kind + "\n";
    out += "  error:   " + r.blocker->error + "\n";
    out += "  cause:   " + r.blocker->cause + "\n";
    out += "  fix:     " + r.blocker->fix + "\n";
  }
  if (!r.features.empty()) {
    out += "\nio_uring features:\n";
    std::size_t width = 0;
    for (const feature& f : r.features) width = std::max(width, f.name.size());
    for (const feature& f : r.features)
      out += std::string("  ") + (f.available ? "yes " : "no  ") + padded(f.name, width + 2) + f.reason + "\n";
  }
  out += "\nlimits:\n";
  std::size_t width = 0;
  for (const limit& l : r.limits) width = std::max(width, l.name.size());
  for (const limit& l : r.limits) {
    out += "  " + padded(l.name, width + 2) + l.value + "\n";
    if (!l.warning.empty()) out += "  " + std::string(width + 2, ' ') + "warning: " + l.warning + "\n";
  }
  return out;
}

}  // namespace ringio::doctor
