// SPDX-License-Identifier: Apache-2.0
// metrics_handler: a Prometheus page of the loops' and a server's metrics.
#include "ringio/http/metrics_handler.hpp"

#include <utility>
#include <vector>

#include "ringio/http/server.hpp"
#include "ringio/http/server_metrics_exposition.hpp"
#include "ringio/metrics/loop_metrics_exposition.hpp"
#include "ringio/runtime.hpp"

namespace ringio::http {
namespace {

// The page is made before the coroutine starts: its frame holds no reference.
task<response> serve_page(std::string page) {
  co_return response::text(200, std::move(page), prometheus_writer::content_type);
}

}  // namespace

handler metrics_handler(std::function<std::string()> page) {
  return [page = std::move(page)](request&) { return serve_page(page()); };
}

handler metrics_handler(runtime& loops, const server* srv) {
  return metrics_handler([&loops, srv] {
    std::vector<loop_metrics> each;
    each.reserve(loops.size());
    for (unsigned i = 0; i < loops.size(); ++i) each.push_back(loops.metrics_of(i));
    prometheus_writer out;
    write_loop_metrics(out, each);
    if (srv != nullptr) write_server_metrics(out, srv->metrics());
    return out.take();
  });
}

}  // namespace ringio::http
