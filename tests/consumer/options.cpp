// SPDX-License-Identifier: Apache-2.0
// The option structs as the docs write them: designated initializers naming only the
// fields that change. Built with -Wall -Wextra -Werror, so a field without a default
// member initializer (-Wmissing-field-initializers) fails the consumer build.
#include <chrono>
#include <ringio/http/server.hpp>
#include <ringio/http/static_files.hpp>
#include <ringio/ringio.hpp>
#include <ringio/tls.hpp>

using namespace std::chrono_literals;

bool options_compile() {
  ringio::io_context_options ctx{.sq_entries = 256};
  ringio::runtime_options rt{.threads = 2};
  ringio::listen_options listen{.backlog = 128};
  ringio::http::server_options http{.idle_timeout = 5s};
  ringio::http::static_files_options files{.cache_control = "max-age=60"};
  ringio::serve_options serve{.threads = 4};
  ringio::serve_options drain{.max_connections = 100, .drain_timeout = 2s};
  ringio::serve_summary summary{};
  ringio::tls::server_options tls_server{.certificate_chain_file = "c.pem", .private_key_file = "k.pem"};
  ringio::tls::client_options tls_client{.alpn = {"http/1.1"}};
  // ringio::tls links (OpenSSL is found): a context whose files are missing fails.
  auto missing = ringio::tls::context::server(tls_server);
  return ctx.sq_entries == 256 && rt.threads == 2 && listen.backlog == 128 && http.idle_timeout == 5s &&
         files.index == "index.html" && serve.threads == 4 && drain.max_connections == 100 &&
         summary.signal_number == 0 && tls_client.verify_peer && !missing;
}
