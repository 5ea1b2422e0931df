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
//
// Contract: nothing a test process started outlives it, even when it is
// killed from outside (ctest's timeout; no destructor runs then). Every
// process it starts inherits MORPHEUS_TEST_RUN=<token>, daemons detached with
// setsid by the deploy scripts included. A reaper, detached from the test's
// process tree (so a kill of that tree does not reach it), waits for the test
// process to end and then stops every process still carrying the token:
// SIGTERM (an NM stops its containers), SIGKILL to what is left after 5 s.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

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

// Processes (other than this one) whose environment holds `marker`.
std::vector<pid_t> marked(const std::string& marker) {
  std::vector<pid_t> out;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return out;
  while (dirent* e = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || pid == ::getpid()) continue;
    std::ifstream in(std::string("/proc/") + e->d_name + "/environ", std::ios::binary);
    const std::string env((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (size_t at = 0; at < env.size();) {
      const size_t next = env.find('\0', at);
      if (env.compare(at, next - at, marker) == 0) {
        out.push_back(static_cast<pid_t>(pid));
        break;
      }
      if (next == std::string::npos) break;
      at = next + 1;
    }
  }
  ::closedir(proc);
  return out;
}

[[noreturn]] void reap(int wait_fd, const std::string& marker) {
  char b;
  for (;;) {  // nobody writes: read returns 0 when the test process has ended
    const ssize_t n = ::read(wait_fd, &b, 1);
    if (n == 0 || (n < 0 && errno != EINTR)) break;
  }
  std::vector<pid_t> left = marked(marker);
  for (pid_t p : left) ::kill(p, SIGTERM);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!left.empty() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    left = marked(marker);
  }
  for (pid_t p : left) ::kill(p, SIGKILL);
  ::_exit(0);
}

// Marks this process's environment and starts the reaper (see the contract).
void startReaper() {
  const std::string token =
      std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}());
  ::setenv("MORPHEUS_TEST_RUN", token.c_str(), 1);
  const std::string marker = "MORPHEUS_TEST_RUN=" + token;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return;  // the write end dies with this process only
  const pid_t child = ::fork();
  if (child == 0) {
    ::setsid();
    if (::fork() != 0) ::_exit(0);  // the reaper is re-parented, out of the test's tree
    // Hold nothing of the test's: ctest waits for EOF on the test's output.
    const int null = ::open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 3; fd++) ::dup2(null, fd);
    for (int fd = 3; fd < 1024; fd++) {
      if (fd != fds[0]) ::close(fd);
    }
    reap(fds[0], marker);
  }
  ::close(fds[0]);
  if (child > 0) ::waitpid(child, nullptr, 0);
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  startReaper();
  const fs::path dir = makeProcessTempDir();
  const int rc = RUN_ALL_TESTS();
  finishProcessTempDir(dir, rc == 0);
  return rc;
}
