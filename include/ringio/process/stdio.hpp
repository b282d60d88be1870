// SPDX-License-Identifier: Apache-2.0
// ringio/process/stdio.hpp — where a child's standard input, output or error goes.
#pragma once

namespace ringio::process {

/// Where one of a child's standard streams is connected.
enum class stdio {
  inherit,  ///< the parent's own descriptor (the default)
  null,     ///< /dev/null
  pipe,     ///< a pipe whose other end the parent reads or writes (child::in, out, err)
};

}  // namespace ringio::process
