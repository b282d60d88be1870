# SPDX-License-Identifier: Apache-2.0
# RINGIO_SANITIZE applies to every target of the build, the library included.
if(RINGIO_SANITIZE)
  add_compile_options(-fsanitize=${RINGIO_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${RINGIO_SANITIZE})
  add_compile_definitions(RINGIO_SANITIZED=1)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # Symmetric transfer is a tail call only with sibling calls, which GCC's ASan stack
    # instrumentation defeats: ringio's own hand-overs are bounded without them, other
    # awaiters are not (see docs/toolchain.md).
    add_compile_options(-foptimize-sibling-calls --param=asan-stack=0)
  endif()
endif()
