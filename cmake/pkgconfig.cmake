# SPDX-License-Identifier: Apache-2.0
# A pkg-config file per installed library: `pkg-config --cflags --libs ringio ringio-http`.
# Each file finds the prefix from its own place (${pcfiledir}), so an install made with
# `cmake --install --prefix P` works wherever P is. The libraries are static: every
# dependency is in Libs or Requires, not in the .private fields.
set(ringio_pc_dir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(ringio_pc_prefix "${CMAKE_INSTALL_PREFIX}")
  set(ringio_pc_libdir "${CMAKE_INSTALL_FULL_LIBDIR}")
  set(ringio_pc_includedir "${CMAKE_INSTALL_FULL_INCLUDEDIR}")
else()
  file(RELATIVE_PATH up "/p/${ringio_pc_dir}" "/p")
  string(REGEX REPLACE "/$" "" up "${up}")
  set(ringio_pc_prefix "\${pcfiledir}/${up}")
  set(ringio_pc_libdir "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
  set(ringio_pc_includedir "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()

# ringio_pkgconfig(<library target> <.pc name> <description> <Requires> [extra Libs...])
function(ringio_pkgconfig target name description requires)
  list(JOIN ARGN " " extra_libs)
  string(STRIP "-L\${libdir} -l$<TARGET_FILE_BASE_NAME:${target}> ${extra_libs}" libs)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/pkgconfig/${name}.pc)
  file(GENERATE OUTPUT ${out} CONTENT "\
prefix=${ringio_pc_prefix}
libdir=${ringio_pc_libdir}
includedir=${ringio_pc_includedir}

Name: ${name}
Description: ${description}
Version: ${PROJECT_VERSION}
Requires: ${requires}
Cflags: -I\${includedir}
Libs: ${libs}
")
  install(FILES ${out} DESTINATION ${ringio_pc_dir})
endfunction()

ringio_pkgconfig(ringio ringio "ringio: C++20 asynchronous I/O on io_uring (and epoll)"
                 "liburing" -pthread)
if(RINGIO_WITH_FIBER)
  get_property(boost_context_library GLOBAL PROPERTY ringio_boost_context_library)
  ringio_pkgconfig(ringio_fiber ringio-fiber "ringio fibers (stackful, on Boost.Context)"
                   "ringio = ${PROJECT_VERSION}" ${boost_context_library})
endif()
if(RINGIO_WITH_TLS)
  ringio_pkgconfig(ringio_tls ringio-tls "ringio TLS streams (OpenSSL 3)"
                   "ringio = ${PROJECT_VERSION}, openssl >= 3")
  ringio_pkgconfig(ringio_http ringio-http "ringio HTTP/1.1 server and client"
                   "ringio-tls = ${PROJECT_VERSION}, zlib")
  ringio_pkgconfig(ringio_https ringio-https "ringio http::server behind TLS"
                   "ringio-http = ${PROJECT_VERSION}")
endif()
