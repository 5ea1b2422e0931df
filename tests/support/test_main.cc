// The main() of every Morpheus test executable (instead of gtest_main).
//
// Contract: a test process gets a temporary directory of its own,
// $TMPDIR/mt-<pid>, and TMPDIR points at it while the tests run, so every file
// a test writes through std::filesystem::temp_directory_path() (databases,
// integration clusters, etcd data, container work dirs of the daemons it
// starts, which inherit TMPDIR) lives below it. When every test passed the
// directory is removed at exit, so a test run leaves no files behind (an etcd
// member alone preallocates 120 MB of WAL). When a test failed, or
// MORPHEUS_TEST_KEEP_TMP is set, it is kept and its path printed on stderr for
// the post-mortem.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <system_error>

namespace {

namespace fs = std::filesystem;

fs::path makeProcessTempDir() {
  fs::path dir = fs::temp_directory_path() / ("mt-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  ::setenv("TMPDIR", dir.c_str(), 1);
  return dir;
}

void finishProcessTempDir(const fs::path& dir, bool passed) {
  if (passed && std::getenv("MORPHEUS_TEST_KEEP_TMP") == nullptr) {
    std::error_code ec;
    fs::remove_all(dir, ec);
    if (ec) std::cerr << "test temp dir " << dir << " not removed: " << ec.message() << "\n";
    return;
  }
  std::cerr << "test files kept in " << dir << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const fs::path dir = makeProcessTempDir();
  const int rc = RUN_ALL_TESTS();
  finishProcessTempDir(dir, rc == 0);
  return rc;
}
