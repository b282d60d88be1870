// SPDX-License-Identifier: Apache-2.0
#include <cstdio>
#include <string>
#include <string_view>

#include "ringio/doctor/diagnose.hpp"

namespace ringio::doctor {
namespace {

std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char esc[8];
          std::snprintf(esc, sizeof esc, "\\u%04x", static_cast<unsigned>(c));
          out += esc;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string field(std::string_view name, const std::string& json_value) { return quoted(name) + ": " + json_value; }

std::string boolean(bool b) { return b ? "true" : "false"; }

}  // namespace

std::string to_json(const report& r) {
  std::string out = "{\n  " + field("kernel", quoted(r.kernel)) + ",\n  " +
                    field("uring_usable", boolean(r.uring_usable)) + ",\n  \"blocker\": ";
  if (r.blocker) {
    out += "{" + field("kind", quoted(r.blocker->kind)) + ", " + field("error", quoted(r.blocker->error)) + ", " +
           field("cause", quoted(r.blocker->cause)) + ", " + field("fix", quoted(r.blocker->fix)) + "}";
  } else {
    out += "null";
  }
  out += ",\n  " + field("backend", r.backend ? quoted(to_string(*r.backend)) : "null");
  out += ",\n  " + field("backend_reason", quoted(r.backend_reason)) + ",\n  \"features\": [";
  for (std::size_t i = 0; i < r.features.size(); ++i) {
    const feature& f = r.features[i];
    out += std::string(i == 0 ? "\n" : ",\n") + "    {" + field("name", quoted(f.name)) + ", " +
           field("available", boolean(f.available)) + ", " + field("used_by_ringio", boolean(f.used_by_ringio)) + ", " +
           field("reason", quoted(f.reason)) + "}";
  }
  out += r.features.empty() ? "],\n  \"limits\": [" : "\n  ],\n  \"limits\": [";
  for (std::size_t i = 0; i < r.limits.size(); ++i) {
    const limit& l = r.limits[i];
    out += std::string(i == 0 ? "\n" : ",\n") + "    {" + field("name", quoted(l.name)) + ", " +
           field("value", quoted(l.value)) + ", " + field("warning", quoted(l.warning)) + "}";
  }
  out += r.limits.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

}  // namespace ringio::doctor
