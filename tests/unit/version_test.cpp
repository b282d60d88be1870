// SPDX-License-Identifier: Apache-2.0
// The version has one value everywhere: CMake's project(VERSION), the macros of
// ringio/version.hpp, the library's ringio::version() and CHANGELOG.md.
#include "ringio/version.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

using namespace ringio;

TEST(Version, HeaderMatchesProject) {
  EXPECT_STREQ(RINGIO_VERSION_STRING, RINGIO_PROJECT_VERSION) << "bump include/ringio/version.hpp";
  EXPECT_EQ(std::to_string(RINGIO_VERSION_MAJOR) + "." + std::to_string(RINGIO_VERSION_MINOR) + "." +
                std::to_string(RINGIO_VERSION_PATCH),
            RINGIO_PROJECT_VERSION);
  EXPECT_EQ(RINGIO_VERSION, RINGIO_VERSION_MAJOR * 10000 + RINGIO_VERSION_MINOR * 100 + RINGIO_VERSION_PATCH);
}

TEST(Version, LibraryMatchesHeader) {
  EXPECT_EQ(version(), header_version);
  EXPECT_EQ(version().string, RINGIO_VERSION_STRING);
}

TEST(Version, ChangelogHasAnEntry) {
  std::ifstream in(RINGIO_CHANGELOG);
  ASSERT_TRUE(in) << RINGIO_CHANGELOG;
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("## [" RINGIO_VERSION_STRING "]"), std::string::npos)
      << "CHANGELOG.md has no section for " RINGIO_VERSION_STRING;
  EXPECT_NE(text.str().find("## [Unreleased]"), std::string::npos);
}
