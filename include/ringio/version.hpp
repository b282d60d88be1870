// SPDX-License-Identifier: Apache-2.0
// ringio/version.hpp — the version of these headers (macros) and of the library a
// program linked (ringio::version()). Semantic versioning: while the major version is
// 0, a new minor version may change the API (CHANGELOG.md lists what changed).
#pragma once

#include <string_view>

/// The major version (0: the API may change between minor versions).
#define RINGIO_VERSION_MAJOR 0
/// The minor version: new features; below 1.0, also incompatible changes.
#define RINGIO_VERSION_MINOR 3
/// The patch version: fixes only.
#define RINGIO_VERSION_PATCH 0
/// "MAJOR.MINOR.PATCH".
#define RINGIO_VERSION_STRING "0.3.0"
/// One number to compare in `#if`: MAJOR * 10000 + MINOR * 100 + PATCH (0.3.0 is 300).
#define RINGIO_VERSION (RINGIO_VERSION_MAJOR * 10000 + RINGIO_VERSION_MINOR * 100 + RINGIO_VERSION_PATCH)

namespace ringio {

/// A version of ringio.
struct version_info {
  int major = 0;            ///< incompatible changes (while 0: see minor)
  int minor = 0;            ///< features; below 1.0 also incompatible changes
  int patch = 0;            ///< fixes
  std::string_view string;  ///< "MAJOR.MINOR.PATCH"

  /// Equal when all three numbers are.
  friend constexpr bool operator==(const version_info& a, const version_info& b) noexcept {
    return a.major == b.major && a.minor == b.minor && a.patch == b.patch;
  }
};

/// The version of the headers a file was compiled with (the RINGIO_VERSION_* macros).
inline constexpr version_info header_version{RINGIO_VERSION_MAJOR, RINGIO_VERSION_MINOR, RINGIO_VERSION_PATCH,
                                             RINGIO_VERSION_STRING};

/// The version of the ringio library the program linked. It differs from
/// header_version only when a program's headers and library come from different
/// installs, e.g. `if (ringio::version() != ringio::header_version) abort();`.
version_info version() noexcept;

}  // namespace ringio
