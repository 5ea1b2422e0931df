// The tests that need a real kernel cgroup (nm_kernel_tests, ctest labels
// "unit;kernel"): the kernel enforces a container's cgroup v2 memory.max, and
// throttles a busy process through cgroup v1 cpu.cfs_quota_us or cgroup v2
// cpu.max (Zhang et al., OSDI'16 §3: throttle before killing). They need
// root, or a delegated cgroup v2 subtree, and skip naming the reason
// otherwise (`ctest -L kernel`, docs/development.md). What the same code
// writes where is checked on stand-in directory trees in nm_unit_tests
// (container_runtime_test.cc, harvest_cpu_test.cc, harvest_test.cc). Every
// cgroup a test creates is removed.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "nodemanager/container_runtime.h"
#include "nodemanager/harvest_cpu.h"
#include "runtime_fixture.h"

namespace morpheus::nm {
namespace {

using namespace std::chrono_literals;

// Where the machine has cgroup v2 with the memory controller and lets this
// test create cgroups (root, a delegated subtree or a cgroup namespace), the
// kernel itself enforces memory.max: the container is OOM-killed in its
// cgroup before the NM's monitor acts. Otherwise skipped, saying why.
TEST_F(RuntimeFixture, KernelEnforcesMemoryMaxOnARealCgroupV2) {
  std::string mount;
  {
    std::ifstream mi("/proc/self/mountinfo");
    std::string line;
    while (std::getline(mi, line)) {
      // "... <mount point> <options> - cgroup2 <source> <super options>"
      std::istringstream f(line);
      std::vector<std::string> w;
      for (std::string x; f >> x;) w.push_back(x);
      auto dash = std::find(w.begin(), w.end(), "-");
      if (w.size() > 4 && dash != w.end() && dash + 1 != w.end() && *(dash + 1) == "cgroup2") {
        mount = w[4];
        break;
      }
    }
  }
  if (mount.empty()) GTEST_SKIP() << "no cgroup v2 hierarchy is mounted on this machine";
  auto own = readOwnCgroupPath();
  std::string base = mount + (own.isOk() && *own != "/" ? *own : "");
  std::string controllers;
  std::getline(std::ifstream(base + "/cgroup.controllers"), controllers);
  if ((" " + controllers + " ").find(" memory ") == std::string::npos) {
    GTEST_SKIP() << "cgroup v2 at " << base << " offers controllers '" << controllers
                 << "' without memory (on this machine memory is bound to a cgroup v1 "
                    "hierarchy or not delegated): memory.max cannot be exercised";
  }
  // The test's cgroup next to (not containing) this process, memory handed down to it.
  std::string test_cg = base + "/morpheus-nmrt-" + std::to_string(::getpid());
  if (::mkdir(test_cg.c_str(), 0755) != 0) {
    GTEST_SKIP() << "cannot create a cgroup in " << base << ": " << std::strerror(errno);
  }
  std::ofstream(base + "/cgroup.subtree_control") << "+memory";
  std::string test_controllers;
  std::getline(std::ifstream(test_cg + "/cgroup.controllers"), test_controllers);
  if ((" " + test_controllers + " ").find(" memory ") == std::string::npos) {
    ::rmdir(test_cg.c_str());
    GTEST_SKIP() << "cannot enable the memory controller in " << base
                 << " (it holds processes or is not ours)";
  }
  {
    // A monitor that never runs on its own: only the kernel can stop the hog.
    ContainerRuntime rt(dir_ + "/local", Millis(600000), Millis(300), metrics_);
    rt.setMemoryEnforcement("cgroup", test_cg);
    ASSERT_TRUE(rt.init().isOk());
    ASSERT_TRUE(rt.launch(shell("oom", "x=$(head -c 400000000 /dev/zero | tr '\\0' a); exit 3", 48))
                    .isOk());
    auto s = waitDone(rt, "oom", 30s);
    EXPECT_EQ(s.reason, ExitReason::kMemoryExceeded) << s.diagnostics;
    EXPECT_NE(s.diagnostics.find("killed by the kernel: over its cgroup limit of 48 MiB"),
              std::string::npos)
        << s.diagnostics;
  }
  ::rmdir((test_cg + "/morpheus-nm").c_str());
  EXPECT_EQ(::rmdir(test_cg.c_str()), 0) << "the container's cgroup was removed";
}

// A child in its own session spinning on the CPU; killed and reaped on exit.
class BusyProcess {
 public:
  BusyProcess() {
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setsid();
      volatile uint64_t x = 0;
      for (;;) x = x + 1;
    }
  }
  ~BusyProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  // utime + stime in clock ticks.
  uint64_t cpuTicks() const {
    std::ifstream f("/proc/" + std::to_string(pid_) + "/stat");
    std::string line;
    std::getline(f, line);
    std::istringstream in(line.substr(line.rfind(')') + 2));
    std::string field;
    uint64_t utime = 0, stime = 0;
    for (int i = 3; i <= 15 && in >> field; i++) {
      if (i == 14) utime = std::stoull(field);
      if (i == 15) stime = std::stoull(field);
    }
    return utime + stime;
  }
  // Cores used over `window`.
  double cpuOver(std::chrono::milliseconds window) const {
    uint64_t before = cpuTicks();
    std::this_thread::sleep_for(window);
    return static_cast<double>(cpuTicks() - before) / static_cast<double>(::sysconf(_SC_CLK_TCK)) /
           (static_cast<double>(window.count()) / 1000.0);
  }

 private:
  pid_t pid_ = -1;
};

int64_t nrThrottled(const std::string& cgroup) {
  std::ifstream f(cgroup + "/cpu.stat");
  std::string key;
  int64_t value = 0;
  while (f >> key >> value) {
    if (key == "nr_throttled") return value;
  }
  return -1;
}

// Throttled to 0.05 vcores through cgroup v1 cpu.cfs_quota_us, a busy process
// is throttled by the kernel (cpu.stat nr_throttled grows) and uses at most a
// few percent of a core; unthrottled and pruned, its cgroup and the group are
// gone.
TEST(HarvestCpuThrottleTest, CgroupV1QuotaThrottlesABusyProcess) {
  const std::string root = "/sys/fs/cgroup/cpu";
  const std::string group = "morpheus-harvest-test-" + std::to_string(::getpid());
  auto made = makeCgroupV1CpuThrottle(root, group);
  if (!made.isOk()) {
    GTEST_SKIP() << "no writable cgroup v1 cpu controller here (needs root): "
                 << made.status().message();
  }
  auto throttle = std::move(made).value();
  BusyProcess busy;
  ASSERT_GT(busy.pid(), 0);
  ContainerId id("container_test_1");
  const std::string cg = root + "/" + group + "/" + id.value();
  // The session's processes are found (setsid in the child may lag the fork).
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (sessionProcesses(busy.pid()).empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  Status st = throttle->limit(id, busy.pid(), 0.05);
  ASSERT_TRUE(st.isOk()) << st.toString();
  std::ifstream procs(cg + "/cgroup.procs");
  std::string first;
  procs >> first;
  EXPECT_EQ(first, std::to_string(busy.pid()));
  int64_t before = nrThrottled(cg);
  ASSERT_GE(before, 0) << cg;
  double used = busy.cpuOver(std::chrono::milliseconds(500));
  EXPECT_GT(nrThrottled(cg), before);
  EXPECT_LT(used, 0.15) << "cores used while capped at 0.05";
  ASSERT_TRUE(throttle->limit(id, busy.pid(), std::nullopt).isOk());
  std::ifstream quota(cg + "/cpu.cfs_quota_us");
  int64_t q = 0;
  quota >> q;
  EXPECT_EQ(q, -1);
  throttle->prune({});
  EXPECT_FALSE(std::filesystem::exists(cg));
  throttle.reset();
  EXPECT_FALSE(std::filesystem::exists(root + "/" + group));
}

// Groups left by an NM killed with SIGKILL (its pid gone) are removed with
// their container cgroups at the next start; a live NM's group is kept.
TEST(HarvestCpuThrottleTest, StaleGroupsOfDeadNmsAreRemoved) {
  const std::string root = "/sys/fs/cgroup/cpu";
  pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ::waitpid(dead, nullptr, 0);
  const std::string stale = root + "/morpheus-harvest-stale-test-" + std::to_string(dead);
  const std::string live = root + "/morpheus-harvest-stale-test-" + std::to_string(::getpid());
  std::error_code ec;
  if (!std::filesystem::create_directory(stale, ec)) {
    GTEST_SKIP() << "no writable cgroup v1 cpu controller at " << root << " (needs root)";
  }
  std::filesystem::create_directory(stale + "/container_1", ec);
  std::filesystem::create_directory(live, ec);
  EXPECT_EQ(removeStaleCpuGroups(root, "morpheus-harvest-stale-test-"), 1);
  EXPECT_FALSE(std::filesystem::exists(stale));
  EXPECT_TRUE(std::filesystem::exists(live));
  std::filesystem::remove(live, ec);
  std::filesystem::remove(stale + "/container_1", ec);
  std::filesystem::remove(stale, ec);
}

// The same through cgroup v2 cpu.max where a v2 hierarchy offers the cpu
// controller to a cgroup this test may create.
TEST(HarvestCpuThrottleTest, CgroupV2CpuMaxThrottlesABusyProcess) {
  const std::string root = "/sys/fs/cgroup";
  std::ifstream controllers(root + "/cgroup.controllers");
  std::string all;
  std::getline(controllers, all);
  if (all.find("cpu") == std::string::npos) {
    GTEST_SKIP() << "no cgroup v2 hierarchy with the cpu controller at " << root;
  }
  const std::string parent = root + "/morpheus-harvest-test-" + std::to_string(::getpid());
  std::error_code ec;
  if (!std::filesystem::create_directory(parent, ec) ||
      !(std::ofstream(root + "/cgroup.subtree_control") << "+cpu")) {
    std::filesystem::remove(parent, ec);
    GTEST_SKIP() << "cannot create a cgroup v2 cgroup with the cpu controller under " << root;
  }
  ContainerId id("container_test_2");
  const std::string cg = parent + "/" + id.value();
  std::filesystem::create_directory(cg, ec);
  (void)(std::ofstream(parent + "/cgroup.subtree_control") << "+cpu");
  {
    BusyProcess busy;
    (void)(std::ofstream(cg + "/cgroup.procs") << busy.pid());
    auto throttle = makeCgroupV2CpuThrottle(parent);
    ASSERT_TRUE(throttle->limit(id, busy.pid(), 0.05).isOk());
    int64_t before = nrThrottled(cg);
    double used = busy.cpuOver(std::chrono::milliseconds(500));
    EXPECT_GT(nrThrottled(cg), before);
    EXPECT_LT(used, 0.15);
  }
  std::filesystem::remove(cg, ec);
  std::filesystem::remove(parent, ec);
}

}  // namespace
}  // namespace morpheus::nm
