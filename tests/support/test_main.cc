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
// setsid by the deploy scripts included. Containers do not: the NM's
// container runtime starts them with a fresh environment and in a session of
// their own (a unit test's ContainerRuntime as much as a daemon's). They are
// found by where they run instead: a container's working directory and its
// stdout/stderr lie in its container dir, below the test's temporary
// directory. A reaper, detached from the test's process tree (so a kill of
// that tree does not reach it), waits for the test process to end and then
// stops every process that carries the token, or whose cwd, stdout or stderr
// is below the test's temporary directory, or that belongs to a session such
// a process leads (a container's children that moved elsewhere): SIGTERM (an
// NM stops its containers), SIGKILL to what is left after 5 s.
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
#include <set>
#include <sstream>
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

bool isPid(const char* name, long* pid) {
  char* end = nullptr;
  *pid = std::strtol(name, &end, 10);
  return end != name && *end == '\0';
}

// `link` (a /proc symlink) resolves to `dir` or below it; a deleted
// directory reads as "<path> (deleted)", which still starts with it.
bool pointsBelow(const std::string& link, const std::string& dir) {
  std::error_code ec;
  const std::string to = fs::read_symlink(link, ec).string();
  return !ec && to.compare(0, dir.size(), dir) == 0 &&
         (to.size() == dir.size() || to[dir.size()] == '/' || to[dir.size()] == ' ');
}

// Session id (field 6 of /proc/<pid>/stat), -1 when the process is gone.
long sessionOf(long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return -1;
  const auto close = line.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(line.substr(close + 1));
  std::string state;
  long ppid = 0, pgrp = 0, sid = -1;
  rest >> state >> ppid >> pgrp >> sid;
  return rest ? sid : -1;
}

// Processes (other than this one) the test left behind (see the contract):
// their environment holds `marker`, or their cwd, stdout or stderr is below
// `dir`, or they belong to a session one of those leads.
std::vector<pid_t> leftBehind(const std::string& marker, const std::string& dir) {
  std::vector<long> all;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return {};
  while (dirent* e = ::readdir(proc)) {
    long pid = 0;
    if (isPid(e->d_name, &pid) && pid != ::getpid()) all.push_back(pid);
  }
  ::closedir(proc);
  std::set<long> found, sessions;
  for (long pid : all) {
    const std::string at = "/proc/" + std::to_string(pid);
    bool mine = pointsBelow(at + "/cwd", dir) || pointsBelow(at + "/fd/1", dir) ||
                pointsBelow(at + "/fd/2", dir);
    if (!mine) {
      std::ifstream in(at + "/environ", std::ios::binary);
      const std::string env((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      for (size_t from = 0; from < env.size() && !mine;) {
        const size_t next = env.find('\0', from);
        mine = env.compare(from, next - from, marker) == 0;
        if (next == std::string::npos) break;
        from = next + 1;
      }
    }
    if (!mine) continue;
    found.insert(pid);
    if (sessionOf(pid) == pid) sessions.insert(pid);
  }
  for (long pid : all) {
    if (!found.count(pid) && sessions.count(sessionOf(pid))) found.insert(pid);
  }
  return {found.begin(), found.end()};
}

[[noreturn]] void reap(int wait_fd, const std::string& marker, const std::string& dir) {
  char b;
  for (;;) {  // nobody writes: read returns 0 when the test process has ended
    const ssize_t n = ::read(wait_fd, &b, 1);
    if (n == 0 || (n < 0 && errno != EINTR)) break;
  }
  std::vector<pid_t> left = leftBehind(marker, dir);
  for (pid_t p : left) ::kill(p, SIGTERM);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!left.empty() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    left = leftBehind(marker, dir);
  }
  for (pid_t p : left) ::kill(p, SIGKILL);
  ::_exit(0);
}

// Marks this process's environment and starts the reaper for what runs
// below `dir`, the test's temporary directory (see the contract).
void startReaper(const std::string& dir) {
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
    reap(fds[0], marker, dir);
  }
  ::close(fds[0]);
  if (child > 0) ::waitpid(child, nullptr, 0);
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const fs::path dir = makeProcessTempDir();
  std::error_code ec;
  const fs::path real = fs::canonical(dir, ec);  // as /proc/<pid>/cwd shows it
  startReaper(ec ? dir.string() : real.string());
  const int rc = RUN_ALL_TESTS();
  finishProcessTempDir(dir, rc == 0);
  return rc;
}
