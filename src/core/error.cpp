// SPDX-License-Identifier: Apache-2.0
#include "ringio/error.hpp"

#include <string>

namespace ringio {
namespace {

class category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "ringio"; }
  std::string message(int v) const override {
    switch (static_cast<errc>(v)) {
      case errc::invalid_address:
        return "invalid address (expected IPv4 a.b.c.d:port, IPv6 [addr]:port, or a Unix path)";
      case errc::invalid_port:
        return "invalid or missing port (expected 0-65535)";
      case errc::address_too_long:
        return "Unix socket path too long";
      case errc::backend_unavailable:
        return "backend unavailable on this host";
      case errc::unsupported_operation:
        return "operation not supported by this backend";
      case errc::no_current_context:
        return "no io_context is running on this thread";
      case errc::message_too_long:
        return "message longer than the limit (no delimiter within it)";
      case errc::end_of_stream:
        return "the peer closed the stream before a whole message arrived";
      case errc::closed:
        return "closed";
      case errc::lagged:
        return "the receiver fell behind and missed values";
      case errc::queue_full:
        return "the queue is full";
      case errc::not_a_listener:
        return "not a listening stream socket";
      case errc::invalid_listen_fds:
        return "malformed socket activation environment (LISTEN_PID, LISTEN_FDS, LISTEN_FDNAMES)";
      case errc::invalid_handover:
        return "malformed listener handover message";
    }
    return "unknown ringio error";
  }
};

}  // namespace

const std::error_category& ringio_category() noexcept {
  static const category c;
  return c;
}

}  // namespace ringio
