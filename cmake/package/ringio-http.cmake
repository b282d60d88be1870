# SPDX-License-Identifier: Apache-2.0
# find_package(ringio COMPONENTS http): ringio::http and ringio::https. The HTTP module
# needs ringio::tls: its client speaks https and its server connections serve TLS; and
# zlib for WebSocket compression (permessage-deflate).
if(NOT TARGET ringio::tls)
  include("${CMAKE_CURRENT_LIST_DIR}/ringio-tls.cmake")
endif()
if(NOT TARGET ZLIB::ZLIB)
  find_package(ZLIB QUIET)
endif()
if(TARGET ringio::tls AND TARGET ZLIB::ZLIB)
  include("${CMAKE_CURRENT_LIST_DIR}/ringioHttpTargets.cmake")
  set(ringio_http_FOUND TRUE)
else()
  set(ringio_http_FOUND FALSE)
  set(ringio_http_NEEDS "${ringio_tls_NEEDS} zlib (Debian: zlib1g-dev)")
endif()
