# ringio_warnings(target): the warning set every first-party target builds with.
function(ringio_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Werror -Wno-unused-parameter
    # GCC 12 warns about designated initializers that leave members to their defaults.
    -Wno-missing-field-initializers)
endfunction()
