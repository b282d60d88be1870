# SPDX-License-Identifier: Apache-2.0
# cmake -DCXX=... -DINCLUDE=... -DSOURCE=... -DEXPECT=... -P expect_error.cmake
# Passes when compiling SOURCE fails with exactly one error whose text contains EXPECT.
execute_process(COMMAND ${CXX} -std=c++20 -fsyntax-only -I${INCLUDE} ${SOURCE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled; it must not")
endif()
string(REGEX MATCHALL "error:" errors "${out}")
list(LENGTH errors count)
string(FIND "${out}" "${EXPECT}" at)
if(at EQUAL -1 OR NOT count EQUAL 1)
  message(FATAL_ERROR "expected one error saying \"${EXPECT}\", got ${count}:\n${out}")
endif()
