# SPDX-License-Identifier: Apache-2.0
# Requests the installed ringio (0.3.0) must refuse: 0.x minor versions are
# incompatible (SameMinorVersion), a newer patch or major version is not there, and an
# unknown component is not found.
foreach(version 0.4 1.0 0.2 0.3.1)
  find_package(ringio ${version} QUIET)
  if(ringio_FOUND)
    message(FATAL_ERROR "find_package(ringio ${version}) accepted ringio ${ringio_VERSION}")
  endif()
endforeach()
find_package(ringio 0.3...<0.4 QUIET)
if(NOT ringio_FOUND)
  message(FATAL_ERROR "find_package(ringio 0.3...<0.4) refused the installed ringio")
endif()
find_package(ringio 0.3 QUIET COMPONENTS no_such_component)
if(ringio_FOUND)
  message(FATAL_ERROR "find_package(ringio COMPONENTS no_such_component) succeeded")
endif()
message(STATUS "ringio ${ringio_VERSION}: 0.4, 1.0, 0.2, 0.3.1 and an unknown component refused")
