# SPDX-License-Identifier: Apache-2.0
# The install: the libraries, the headers, a CMake package whose components bring their
# own dependencies (cmake/package/), and a pkg-config file per library.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
set(ringio_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/ringio)

# One export set per component, so that each is loaded (with its dependencies) only
# when asked for: ringio (liburing), fiber (Boost.Context), tls (OpenSSL), http + https.
function(ringio_install_export name)
  install(TARGETS ${ARGN} EXPORT ${name}
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(EXPORT ${name} NAMESPACE ringio:: DESTINATION ${ringio_cmake_dir})
endfunction()
ringio_install_export(ringioTargets ringio)
set(components)
if(RINGIO_WITH_FIBER)
  install(TARGETS ringio_fiber ringio_fiber_hooks EXPORT ringioFiberTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          OBJECTS DESTINATION ${CMAKE_INSTALL_LIBDIR}/ringio/fiber_hooks
          INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(EXPORT ringioFiberTargets NAMESPACE ringio:: DESTINATION ${ringio_cmake_dir})
  # For LD_PRELOAD, and the list of names a program linking the hooks exports.
  install(TARGETS ringio_fiber_hooks_preload LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(FILES src/fiber_hooks/exports.list DESTINATION ${CMAKE_INSTALL_DATADIR}/ringio RENAME fiber_hooks.list)
  list(APPEND components fiber)
endif()
if(RINGIO_WITH_TLS)
  ringio_install_export(ringioTlsTargets ringio_tls)
  ringio_install_export(ringioHttpTargets ringio_http ringio_https)
  list(APPEND components tls http https)
endif()
# The headers of the libraries built.
set(left_out)
if(NOT RINGIO_WITH_FIBER)
  list(APPEND left_out PATTERN fiber EXCLUDE PATTERN fiber.hpp EXCLUDE)
endif()
if(NOT RINGIO_WITH_TLS)
  list(APPEND left_out PATTERN tls EXCLUDE PATTERN tls.hpp EXCLUDE PATTERN http EXCLUDE)
endif()
install(DIRECTORY include/ringio DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} ${left_out})
if(TARGET ringio_doctor)
  install(TARGETS ringio_doctor RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
if(TARGET ringio_top)
  install(TARGETS ringio_top RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
# `ringio top` and `ringio doctor` run ringio-top and ringio-doctor.
if(TARGET ringio_doctor OR TARGET ringio_top)
  install(PROGRAMS apps/ringio.sh DESTINATION ${CMAKE_INSTALL_BINDIR} RENAME ringio)
endif()
# The seccomp fragment that lets a container use io_uring (docs/operations.md).
install(FILES deploy/seccomp/ringio-io_uring.json DESTINATION ${CMAKE_INSTALL_DATADIR}/ringio/seccomp)
install(FILES LICENSE THIRD_PARTY_NOTICES.md CHANGELOG.md DESTINATION ${CMAKE_INSTALL_DOCDIR})

configure_package_config_file(cmake/package/ringioConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/ringioConfig.cmake
  INSTALL_DESTINATION ${ringio_cmake_dir})
# 0.x: a new minor version may break the API, so 0.4 does not satisfy a request for 0.3.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/ringioConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
list(TRANSFORM components REPLACE "(.+)" "cmake/package/ringio-\\1.cmake" OUTPUT_VARIABLE component_files)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ringioConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/ringioConfigVersion.cmake ${component_files}
        DESTINATION ${ringio_cmake_dir})

include(cmake/pkgconfig.cmake)
