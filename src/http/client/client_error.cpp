// SPDX-License-Identifier: Apache-2.0
// The messages of client_errc.
#include "ringio/http/client_error.hpp"

#include <string>

namespace ringio::http {
namespace {

class client_error_category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "ringio.http.client"; }
  std::string message(int v) const override {
    switch (static_cast<client_errc>(v)) {
      case client_errc::bad_url:
        return "bad URL (expected http://host[:port]/path or https://...)";
      case client_errc::unsupported_scheme:
        return "could not make the TLS context for https:// (see client_options::tls)";
      case client_errc::resolve_failed:
        return "the host name could not be resolved";
      case client_errc::connect_failed:
        return "could not connect to any address of the host";
      case client_errc::connect_timeout:
        return "timed out connecting";
      case client_errc::tls_handshake_timeout:
        return "timed out in the TLS handshake";
      case client_errc::head_timeout:
        return "timed out waiting for the response head";
      case client_errc::body_timeout:
        return "timed out waiting for the response body";
      case client_errc::bad_status_line:
        return "malformed status line in the response";
      case client_errc::bad_header:
        return "malformed header field in the response";
      case client_errc::head_too_large:
        return "response head too large (bytes or fields)";
      case client_errc::bad_content_length:
        return "invalid or conflicting Content-Length in the response";
      case client_errc::bad_transfer_encoding:
        return "unsupported Transfer-Encoding in the response (only chunked is decoded)";
      case client_errc::bad_chunk:
        return "malformed chunked framing in the response body";
      case client_errc::truncated_body:
        return "the connection closed before the whole response body arrived";
      case client_errc::body_too_large:
        return "response body larger than max_body";
      case client_errc::too_many_redirects:
        return "too many redirects";
      case client_errc::bad_redirect:
        return "redirect without a usable Location";
      case client_errc::body_source_failed:
        return "the request body source failed";
      case client_errc::connection_closed:
        return "the server closed the connection before responding";
      case client_errc::bad_request_header:
        return "malformed request header field (name not a token, or CR/LF in a value)";
    }
    return "unknown HTTP client error";
  }
};

}  // namespace

const std::error_category& client_category() noexcept {
  static const client_error_category c;
  return c;
}

}  // namespace ringio::http
