// SPDX-License-Identifier: Apache-2.0
// ringio/http/http.hpp — the whole HTTP module in one include (target ringio::http).
#pragma once

#include "ringio/http/body_writer.hpp"
#include "ringio/http/chunked_decoder.hpp"
#include "ringio/http/chunked_reader.hpp"
#include "ringio/http/client.hpp"
#include "ringio/http/header_list.hpp"
#include "ringio/http/json_writer.hpp"
#include "ringio/http/method.hpp"
#include "ringio/http/percent_decode.hpp"
#include "ringio/http/query_params.hpp"
#include "ringio/http/request.hpp"
#include "ringio/http/request_parser.hpp"
#include "ringio/http/resolver.hpp"
#include "ringio/http/response.hpp"
#include "ringio/http/response_head.hpp"
#include "ringio/http/router.hpp"
#include "ringio/http/server.hpp"
#include "ringio/http/static_files.hpp"
#include "ringio/http/status.hpp"
