// SPDX-License-Identifier: Apache-2.0
#include "top/render.hpp"

#include <cmath>
#include <cstdio>
#include <string_view>

#include "ringio/http/json_writer.hpp"

namespace top {
namespace {

constexpr std::string_view bold = "\x1b[1m";
constexpr std::string_view inverse = "\x1b[7m";
constexpr std::string_view plain = "\x1b[0m";

std::string format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// 0, 7, 0.5, 950, 12.3k, 456k, 1.2M, 3.4G.
std::string count(double v) {
  if (v >= 1e9) return format("%.1fG", v / 1e9);
  if (v >= 1e6) return format(v >= 1e8 ? "%.0fM" : "%.1fM", v / 1e6);
  if (v >= 1e4) return format(v >= 1e5 ? "%.0fk" : "%.1fk", v / 1e3);
  if (v > 0 && v < 10 && v != std::floor(v)) return format("%.1f", v);
  return format("%.0f", v);
}

std::string bytes(double v) {
  if (v >= 1e9) return format("%.1f GB", v / 1e9);
  if (v >= 1e6) return format("%.1f MB", v / 1e6);
  if (v >= 1e3) return format("%.1f kB", v / 1e3);
  return format("%.0f B", v);
}

std::string run_bound(double s) {
  if (s <= 0) return "-";
  if (std::isinf(s)) return ">1s";
  if (s < 1e-3) return "<=" + format("%g", s * 1e6) + "us";
  if (s < 1) return "<=" + format("%g", s * 1e3) + "ms";
  return "<=" + format("%g", s) + "s";
}

std::string cell(const loop_row& r, column c) {
  switch (c) {
    case column::loop:
      return r.loop < 0 ? "total" : std::to_string(r.loop);
    case column::ops:
      return count(r.ops_per_second);
    case column::in_flight:
      return count(r.in_flight);
    case column::cancelled:
      return count(r.cancelled_per_second);
    case column::failed:
      return count(r.failed_per_second);
    case column::stalls:
      return count(r.stalls);
    case column::slowest:
      return run_bound(r.slowest_run_seconds);
    case column::run:
      return r.run_percent ? format("%.0f", *r.run_percent) : "-";
    case column::tasks:
      return count(r.tasks);
  }
  return {};
}

std::string pad(std::string_view text, int width, bool left) {
  std::string out;
  const int fill = width - static_cast<int>(text.size());
  if (!left && fill > 0) out.append(static_cast<std::size_t>(fill), ' ');
  out += text;
  if (left && fill > 0) out.append(static_cast<std::size_t>(fill), ' ');
  return out;
}

std::string table_line(const render_options& opts, bool heading, const loop_row* r) {
  std::string line;
  for (const column_info& c : columns) {
    if (!line.empty()) line += ' ';
    const bool first = c.id == column::loop;
    std::string text = heading ? std::string(c.heading) : cell(*r, c.id);
    if (heading && c.id == opts.sort) text = (opts.reversed ? "^" : "v") + text;
    text = pad(text, c.width, first);
    if (opts.ansi && heading && c.id == opts.sort) text = std::string(inverse) + text + std::string(plain);
    line += text;
  }
  if (opts.ansi && (heading || r->loop < 0)) line = std::string(bold) + line + std::string(plain);
  return line;
}

std::string header_cpu(const top_view& v, const render_options& opts) {
  std::string s = "CPU ";
  s += v.cpu_percent ? format("%.0f%%", *v.cpu_percent) : "-";
  s += " (" + opts.cpu_source + ")";
  s += "   in " + bytes(v.total.bytes_in_per_second) + "/s, out " + bytes(v.total.bytes_out_per_second) + "/s";
  return s;
}

std::string header_http(const top_view& v) {
  if (!v.has_http) return "HTTP: no ringio_http metrics on this page";
  return "HTTP " + count(v.requests_per_second) + " req/s, 5xx " + count(v.errors_5xx_per_second) + "/s, connections " +
         count(v.connections_active) + " (idle " + count(v.connections_idle) + ")";
}

void number_or_null(ringio::http::json_writer& j, const std::optional<double>& v) {
  if (v) j.value(*v);
  else j.null();
}

void json_row(ringio::http::json_writer& j, const loop_row& r) {
  j.begin_object();
  if (r.loop >= 0) j.key("loop").value(r.loop);
  j.key("operations_per_second").value(r.ops_per_second);
  j.key("in_flight").value(r.in_flight);
  j.key("cancellations_per_second").value(r.cancelled_per_second);
  j.key("failures_per_second").value(r.failed_per_second);
  j.key("stalls").value(r.stalls);
  j.key("slowest_run_seconds");
  number_or_null(j, r.slowest_run_seconds > 0 ? std::optional<double>(r.slowest_run_seconds) : std::nullopt);
  j.key("run_percent");
  number_or_null(j, r.run_percent);
  j.key("tasks").value(r.tasks);
  j.key("bytes_received_per_second").value(r.bytes_in_per_second);
  j.key("bytes_sent_per_second").value(r.bytes_out_per_second);
  j.end_object();
}

}  // namespace

std::vector<std::string> render_lines(top_view v, const render_options& opts) {
  std::vector<std::string> lines;
  lines.push_back("ringio-top  " + opts.target + "  every " + format("%.1f", v.interval_seconds) + " s, " +
                  std::to_string(v.loops.size()) + (v.loops.size() == 1 ? " loop" : " loops") + ", stalls: runs over " +
                  format("%g", stall_threshold_seconds * 1e3) + " ms");
  lines.push_back(header_cpu(v, opts));
  lines.push_back(header_http(v));
  lines.emplace_back();
  sort_rows(v.loops, opts.sort, opts.reversed);
  lines.push_back(table_line(opts, true, nullptr));
  for (const loop_row& r : v.loops) lines.push_back(table_line(opts, false, &r));
  lines.push_back(table_line(opts, false, &v.total));
  if (!opts.status.empty()) {
    lines.emplace_back();
    lines.push_back(opts.status);
  }
  if (opts.keys) {
    lines.emplace_back();
    lines.push_back("sort: l loop o ops i inflight c cancel f fail s stalls w slowest u run t tasks");
    lines.push_back("      < > previous/next column, r reverse; q quit");
  }
  return lines;
}

std::string render_json(const top_view& v, const render_options& opts) {
  ringio::http::json_writer j;
  j.begin_object();
  j.key("target").value(opts.target);
  j.key("interval_seconds").value(v.interval_seconds);
  j.key("stall_threshold_seconds").value(stall_threshold_seconds);
  j.key("cpu_percent");
  number_or_null(j, v.cpu_percent);
  j.key("cpu_source").value(opts.cpu_source);
  j.key("http");
  if (v.has_http) {
    j.begin_object();
    j.key("requests_per_second").value(v.requests_per_second);
    j.key("errors_5xx_per_second").value(v.errors_5xx_per_second);
    j.key("connections_active").value(v.connections_active);
    j.key("connections_idle").value(v.connections_idle);
    j.end_object();
  } else {
    j.null();
  }
  j.key("loops").begin_array();
  for (const loop_row& r : v.loops) json_row(j, r);
  j.end_array();
  j.key("total");
  json_row(j, v.total);
  j.end_object();
  return j.take();
}

}  // namespace top
