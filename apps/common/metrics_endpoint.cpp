// SPDX-License-Identifier: Apache-2.0
#include "common/metrics_endpoint.hpp"

#include <cstdio>
#include <utility>

#include "ringio/http/metrics_handler.hpp"
#include "ringio/io_context.hpp"
#include "ringio/log.hpp"
#include "ringio/post.hpp"

namespace apps {

bool metrics_endpoint::bind(const ringio::socket_address& at) {
  auto l = ringio::stream_listener::bind(at);
  if (!l) {
    ringio::log(ringio::log_level::error, "--metrics-port: cannot listen on %s: %s", at.to_string().c_str(),
                l.error().message().c_str());
    return false;
  }
  listener_.emplace(std::move(*l));
  return true;
}

void metrics_endpoint::start(ringio::runtime& loops, const ringio::http::server* observed, const char* name) {
  routes_.get("/metrics", ringio::http::metrics_handler(loops, observed));
  server_ = std::make_unique<ringio::http::server>(routes_);
  if (auto bound = listener_->local_address()) std::printf("%s: metrics on %s\n", name, bound->to_string().c_str());
  std::fflush(stdout);
  ringio::io_context& loop0 = loops.context(0);
  ringio::post(loop0, [this, &loop0] { loop0.spawn(server_->serve(*listener_, stop_.get_token())); });
}

}  // namespace apps
