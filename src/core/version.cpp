// SPDX-License-Identifier: Apache-2.0
#include "ringio/version.hpp"

namespace ringio {

// Compiled into the library: the version of the headers the library was built with.
version_info version() noexcept { return header_version; }

}  // namespace ringio
