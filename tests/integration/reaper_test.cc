// The test main's reaper (tests/support/test_main.cc): a test process killed
// with SIGKILL, as ctest kills one at its timeout, leaves nothing running,
// not even a process it detached with setsid the way deploy/local-cluster.sh
// starts the daemons.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "harness.h"

namespace morpheus::testing {
namespace {

namespace fs = std::filesystem;

// Alive and not a zombie.
bool alive(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return false;
  const auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

// Run only by KilledTestLeavesNoDetachedProcess, in a process of its own:
// detaches a sleeper in a session of its own, writes its pid, and waits to
// be killed.
TEST(ReaperIT, DISABLED_HelperDetachesASleeperAndWaits) {
  const char* pid_file = std::getenv("MORPHEUS_REAPER_PID_FILE");
  ASSERT_NE(pid_file, nullptr);
  const pid_t sleeper = ::fork();
  if (sleeper == 0) {
    ::setsid();
    ::execl("/bin/sleep", "sleep", "300", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  {
    std::ofstream out(std::string(pid_file) + ".tmp");
    out << sleeper << "\n";
  }
  fs::rename(std::string(pid_file) + ".tmp", pid_file);
  std::this_thread::sleep_for(std::chrono::seconds(120));
}

TEST(ReaperIT, KilledTestLeavesNoDetachedProcess) {
  const std::string pid_file = freshDir("reaper") + "/sleeper.pid";
  const pid_t helper = ::fork();
  if (helper == 0) {
    ::setenv("MORPHEUS_REAPER_PID_FILE", pid_file.c_str(), 1);
    const std::string self = fs::read_symlink("/proc/self/exe").string();
    ::execl(self.c_str(), self.c_str(), "--gtest_also_run_disabled_tests",
            "--gtest_filter=ReaperIT.DISABLED_HelperDetachesASleeperAndWaits",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ASSERT_GT(helper, 0);
  pid_t sleeper = 0;
  waitFor([&] { return fs::exists(pid_file); }, std::chrono::seconds(20));
  std::ifstream(pid_file) >> sleeper;
  ASSERT_GT(sleeper, 0) << "the helper did not start its sleeper";
  EXPECT_TRUE(alive(sleeper));
  ::kill(helper, SIGKILL);  // no destructor, no atexit: only the reaper can clean up
  int status = 0;
  ::waitpid(helper, &status, 0);
  const bool gone = waitFor([&] { return !alive(sleeper); }, std::chrono::seconds(15));
  if (!gone) ::kill(sleeper, SIGKILL);
  EXPECT_TRUE(gone) << "the detached sleeper " << sleeper << " outlived its killed test";
}

}  // namespace
}  // namespace morpheus::testing
