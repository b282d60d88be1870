// SPDX-License-Identifier: Apache-2.0
// pool_flags — the receive-buffer options the multishot servers share:
// `--recv-bundle on|off` and `--pbuf-inc on|off` (ringio::buffer_pool_options).
#pragma once

#include <string>

#include "common/cli.hpp"
#include "ringio/net/buffer_pool_options.hpp"

namespace apps {

constexpr const char* pool_flags_usage =
    "  --recv-bundle on|off     receive bundles: one completion carries several pool\n"
    "                           buffers (io_uring, Linux 6.10; default on)\n"
    "  --pbuf-inc on|off        incremental pool buffers: small messages share a buffer\n"
    "                           (io_uring, Linux 6.12; default off)\n";

/// Reads --recv-bundle and --pbuf-inc; a value other than on/off fails with usage.
inline ringio::buffer_pool_options read_pool_flags(cli& args) {
  auto on_off = [&](const std::string& name, bool fallback) {
    const std::string v = args.text(name, fallback ? "on" : "off");
    if (v != "on" && v != "off") args.fail("--" + name + " must be on or off, got '" + v + "'");
    return v == "on";
  };
  ringio::buffer_pool_options o;
  o.bundle = on_off("recv-bundle", o.bundle);
  o.incremental = on_off("pbuf-inc", o.incremental);
  return o;
}

}  // namespace apps
