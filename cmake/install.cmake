# SPDX-License-Identifier: Apache-2.0
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS ringio EXPORT ringioTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS ringio_http EXPORT ringioTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS ringio_fiber EXPORT ringioTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS ringio_tls EXPORT ringioTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS ringio_https EXPORT ringioTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY include/ringio DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT ringioTargets NAMESPACE ringio:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ringio)
configure_package_config_file(cmake/ringioConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/ringioConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ringio)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/ringioConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ringioConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/ringioConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ringio)
