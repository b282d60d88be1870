// SPDX-License-Identifier: Apache-2.0
// ringio/tls.hpp — TLS for ringio streams (OpenSSL 3); link ringio::tls.
#pragma once

#include "ringio/tls/client_options.hpp"
#include "ringio/tls/context.hpp"
#include "ringio/tls/error.hpp"
#include "ringio/tls/protocol_version.hpp"
#include "ringio/tls/server_options.hpp"
#include "ringio/tls/stream.hpp"
