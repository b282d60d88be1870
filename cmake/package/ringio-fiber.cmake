# SPDX-License-Identifier: Apache-2.0
# find_package(ringio COMPONENTS fiber): ringio::fiber, on Boost.Context, linked
# statically as in ringio's own build (a switch is then a direct call).
if(NOT TARGET Boost::context)
  set(_ringio_boost_static ${Boost_USE_STATIC_LIBS})
  set(Boost_USE_STATIC_LIBS ON)
  find_package(Boost 1.74 QUIET COMPONENTS context)
  set(Boost_USE_STATIC_LIBS ${_ringio_boost_static})
  unset(_ringio_boost_static)
endif()
if(TARGET Boost::context)
  include("${CMAKE_CURRENT_LIST_DIR}/ringioFiberTargets.cmake")
  set(ringio_fiber_FOUND TRUE)
else()
  set(ringio_fiber_FOUND FALSE)
  set(ringio_fiber_NEEDS "Boost.Context 1.74 or newer (Debian: libboost-context-dev)")
endif()
