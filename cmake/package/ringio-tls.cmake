# SPDX-License-Identifier: Apache-2.0
# find_package(ringio COMPONENTS tls): ringio::tls, on OpenSSL 3.
if(NOT TARGET OpenSSL::SSL)
  find_package(OpenSSL 3 QUIET)
endif()
if(TARGET OpenSSL::SSL AND TARGET OpenSSL::Crypto)
  include("${CMAKE_CURRENT_LIST_DIR}/ringioTlsTargets.cmake")
  set(ringio_tls_FOUND TRUE)
else()
  set(ringio_tls_FOUND FALSE)
  set(ringio_tls_NEEDS "OpenSSL 3 (Debian: libssl-dev)")
endif()
