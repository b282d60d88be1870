// SPDX-License-Identifier: Apache-2.0
// ringio-top — a live view of a running ringio process, read from its /metrics page
// (Prometheus text format): per loop, operations per second, in flight, cancellations,
// stalls and run time, with the process's CPU and the HTTP server's requests and
// connections. `--once` prints one snapshot for scripts (`--json` as JSON). See
// docs/operations.md.
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>

#include "common/cli.hpp"
#include "ringio/http/client.hpp"
#include "ringio/io_context.hpp"
#include "ringio/sync_wait.hpp"
#include "top/column.hpp"
#include "top/metric_sample.hpp"
#include "top/process_cpu.hpp"
#include "top/render.hpp"
#include "top/scrape.hpp"
#include "top/terminal.hpp"
#include "top/top_view.hpp"

namespace {

const char* const usage =
    "usage: ringio-top [options] TARGET\n"
    "Shows a running ringio process, read from its metrics page (a server app's\n"
    "--metrics-port, or http::metrics_handler): per loop, operations per second, in\n"
    "flight, cancellations, failures, stalls (runs of the loop over 10 ms), the slowest\n"
    "run, the share of time the loop ran (RUN%) and tasks; the process's CPU; HTTP\n"
    "requests and connections.\n"
    "TARGET: PORT (on 127.0.0.1), HOST:PORT, or a URL (http://HOST:PORT/PATH; the path\n"
    "defaults to /metrics).\n"
    "options:\n"
    "  --interval MS   time between two reads (default 1000; 50 to 3600000)\n"
    "  --sort COLUMN   loop, ops (default), inflight, cancel, fail, stalls, slowest,\n"
    "                  run or tasks\n"
    "  --reverse       sort the other way\n"
    "  --pid PID       read the CPU of this process from /proc (default: the process\n"
    "                  that listens on the target's port, when the target is local)\n"
    "  --once          read twice, an interval apart, print one snapshot as text, exit\n"
    "  --json          with --once: print it as one JSON object\n"
    "keys: l o i c f s w u t sort by a column, < > (or the arrows) the previous or next\n"
    "column, r reverse, q quit.\n"
    "Exit status: 0, 1 when the page cannot be read, 2 for a bad argument.\n";

volatile std::sig_atomic_t stop_signal = 0;
extern "C" void on_stop_signal(int) { stop_signal = 1; }

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The URL TARGET names, or "" when it names none.
std::string target_url(const std::string& target) {
  std::string url;
  if (target.starts_with("http://") || target.starts_with("https://")) {
    url = target;
  } else if (!target.empty() && target.find_first_not_of("0123456789") == std::string::npos) {
    url = "http://127.0.0.1:" + target;
  } else if (target.find(':') != std::string::npos && target.find('/') == std::string::npos) {
    url = "http://" + target;
  } else {
    return {};
  }
  auto parsed = ringio::http::parse_url(url);
  if (!parsed) return {};
  if (!parsed->explicit_port && !target.starts_with("http")) return {};
  if (parsed->target.empty() || parsed->target == "/")
    url = url.substr(0, url.size() - parsed->target.size()) + "/metrics";
  return url;
}

bool is_local_host(std::string_view host) {
  return host == "localhost" || host.starts_with("127.") || host == "::1" || host == "0.0.0.0" || host == "::";
}

struct page_or_error {
  std::string page;
  std::string error;  // empty: page holds the page
};

ringio::task<page_or_error> fetch_page(ringio::http::client& client, const std::string& url) {
  auto response = co_await client.get(url);
  if (!response) co_return page_or_error{{}, response.error().message()};
  if (response->status != 200)
    co_return page_or_error{{}, "answered " + std::to_string(response->status) + " " + response->reason};
  co_return page_or_error{std::move(response->body), {}};
}

// Reads the page: the scrape, or nullopt with the reason in `error`.
class source {
 public:
  source(std::string url, std::optional<pid_t> pid) : url_(std::move(url)), pid_(pid) {}

  std::optional<top::scrape> read(std::string& error) {
    page_or_error got = ringio::sync_wait(ctx_, fetch_page(client_, url_));
    if (!got.error.empty()) {
      error = "cannot read " + url_ + ": " + got.error;
      return std::nullopt;
    }
    top::scrape s = top::read_scrape(top::parse_prometheus_text(got.page), now_seconds());
    if (s.loops.empty()) {
      error = url_ + " has no ringio loop metrics (ringio_operations_*): is it a ringio metrics page?";
      return std::nullopt;
    }
    if (!s.cpu_from_page && pid_) s.cpu_seconds = top::process_cpu_seconds(*pid_);
    return s;
  }

 private:
  std::string url_;
  std::optional<pid_t> pid_;
  ringio::io_context ctx_;
  ringio::http::client client_{ringio::http::client_options{.connect_timeout = std::chrono::milliseconds(3000),
                                                            .head_timeout = std::chrono::milliseconds(5000),
                                                            .body_timeout = std::chrono::milliseconds(5000)}};
};

std::string cpu_source(const top::scrape& s, std::optional<pid_t> pid) {
  if (s.cpu_from_page) return "process_cpu_seconds_total on the page";
  if (pid && s.cpu_seconds) return "/proc, pid " + std::to_string(*pid);
  if (pid) return "pid " + std::to_string(*pid) + " not readable";
  return "not local: RUN% per loop only";
}

int fail_read(const std::string& error) {
  std::fprintf(stderr, "ringio-top: %s\n", error.c_str());
  return 1;
}

// The column `key` sorts by: a column's key, or '<' and '>' for its neighbours.
std::optional<top::column> column_after_key(top::column current, char key) {
  const int at = static_cast<int>(current);
  const int last = static_cast<int>(top::columns.size()) - 1;
  if (key == '<') return static_cast<top::column>(at == 0 ? last : at - 1);
  if (key == '>') return static_cast<top::column>(at == last ? 0 : at + 1);
  return top::column_for_key(key);
}

int run_interactive(source& src, top::render_options opts, int interval_ms, std::optional<pid_t> pid) {
  std::string error;
  auto before = src.read(error);
  if (!before) return fail_read(error);
  opts.cpu_source = cpu_source(*before, pid);
  opts.ansi = true;
  opts.keys = true;
  std::signal(SIGINT, on_stop_signal);  // the terminal is put back before exiting
  std::signal(SIGTERM, on_stop_signal);
  std::signal(SIGHUP, on_stop_signal);
  std::optional<top::top_view> view;
  top::terminal term;
  auto redraw = [&] {
    if (view) term.draw(top::render_lines(*view, opts));
    else term.draw({"ringio-top  " + opts.target, "reading...", opts.status});
  };
  redraw();
  double deadline = now_seconds() + interval_ms / 1000.0;
  while (stop_signal == 0) {
    const double left = deadline - now_seconds();
    if (left <= 0) {
      if (auto after = src.read(error)) {
        view = top::compare(*before, *after);
        before = after;
        opts.status.clear();
      } else {
        opts.status = "last read failed: " + error;
      }
      redraw();
      deadline = std::max(deadline + interval_ms / 1000.0, now_seconds() + 0.01);
      continue;
    }
    auto key = term.read_key(static_cast<int>(left * 1000) + 1);
    if (!key) continue;
    if (*key == 'q' || *key == 'Q') break;
    if (*key == 'r') {
      opts.reversed = !opts.reversed;
    } else if (auto next = column_after_key(opts.sort, *key)) {
      if (*next != opts.sort) opts.reversed = false;  // each column starts in its own order
      opts.sort = *next;
    } else {
      continue;
    }
    redraw();
  }
  return 0;
}

int run_once(source& src, top::render_options opts, int interval_ms, bool json, std::optional<pid_t> pid) {
  std::string error;
  auto before = src.read(error);
  if (!before) return fail_read(error);
  std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms));
  auto after = src.read(error);
  if (!after) return fail_read(error);
  opts.cpu_source = cpu_source(*after, pid);
  const top::top_view view = top::compare(*before, *after);
  if (json) {
    std::printf("%s\n", top::render_json(view, opts).c_str());
  } else {
    for (const std::string& line : top::render_lines(view, opts)) std::printf("%s\n", line.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  apps::cli args(argc, argv, usage, {"once", "json", "reverse"});
  const int interval_ms = static_cast<int>(args.integer("interval", 1000, 50, 3'600'000));
  const std::string sort = args.text("sort", "ops");
  const bool once = args.flag("once");
  const bool json = args.flag("json");
  const bool reversed = args.flag("reverse");
  const std::int64_t pid_arg = args.integer("pid", 0, 1, 1 << 30);
  const std::string target = args.positional_text(0, "TARGET");
  args.done(1);
  auto by = top::column_named(sort);
  if (!by) args.fail("unknown --sort column '" + sort + "'");
  if (json && !once) args.fail("--json needs --once");
  const std::string url = target_url(target);
  if (url.empty()) args.fail("TARGET must be PORT, HOST:PORT or http://HOST:PORT/PATH, got '" + target + "'");
  if (!once && (::isatty(STDIN_FILENO) == 0 || ::isatty(STDOUT_FILENO) == 0))
    args.fail("the live view needs a terminal: use --once (or --once --json) in scripts");

  std::optional<pid_t> pid;
  if (pid_arg > 0) {
    pid = static_cast<pid_t>(pid_arg);
  } else if (auto parsed = ringio::http::parse_url(url); parsed && is_local_host(parsed->host)) {
    pid = top::find_listener(parsed->port);
  }
  top::render_options opts;
  opts.target = url;
  opts.sort = *by;
  opts.reversed = reversed;
  source src(url, pid);
  return once ? run_once(src, opts, interval_ms, json, pid) : run_interactive(src, opts, interval_ms, pid);
}
