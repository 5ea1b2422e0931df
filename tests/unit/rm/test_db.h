// Shared by the RM unit tests: a fresh SQLite state-store file per test case.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace morpheus::rm {

// <tmp>/morpheus-<tag>-<pid>/<current test name>.db, removed if it exists.
inline std::string freshTestDb(const std::string& tag) {
  auto dir = std::filesystem::temp_directory_path() /
             ("morpheus-" + tag + "-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto path =
      dir / (std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + ".db");
  std::filesystem::remove(path);
  return path.string();
}

}  // namespace morpheus::rm
