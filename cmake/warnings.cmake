# SPDX-License-Identifier: Apache-2.0
# ringio_warnings(target): the warning set every first-party target builds with.
function(ringio_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Werror -Wno-unused-parameter
    # GCC 12 warns about designated initializers that leave members to their defaults.
    -Wno-missing-field-initializers
    # GCC 12 at -O3 reports impossible overlaps inside std::string's operator+
    # (GCC bug 105329); the warning carries no signal there.
    $<$<CXX_COMPILER_ID:GNU>:-Wno-restrict>)
endfunction()
