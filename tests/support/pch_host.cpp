// SPDX-License-Identifier: Apache-2.0
// The target that owns the tests' precompiled header (tests/CMakeLists.txt,
// RINGIO_TEST_PCH): it is built with this target's flags, and the test programs reuse it.
