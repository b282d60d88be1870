# SPDX-License-Identifier: Apache-2.0
# find_package(ringio COMPONENTS https): ringio::https (http::server behind TLS), which
# the http component brings too.
if(NOT TARGET ringio::https)
  include("${CMAKE_CURRENT_LIST_DIR}/ringio-http.cmake")
endif()
if(TARGET ringio::https)
  set(ringio_https_FOUND TRUE)
else()
  set(ringio_https_FOUND FALSE)
  set(ringio_https_NEEDS "${ringio_http_NEEDS}")
endif()
