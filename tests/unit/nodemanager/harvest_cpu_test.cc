// CPU throttling of secondary containers on a real cgroup (Zhang et al.,
// OSDI'16 §3: throttle before killing). A busy process in its own session
// plays the container; the test needs root and a writable cgroup cpu
// controller, and skips with the reason otherwise. Every cgroup it creates is
// removed.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "nodemanager/container_runtime.h"
#include "nodemanager/harvest_cpu.h"

namespace morpheus::nm {
namespace {

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

// Quotas: vcores x 100 ms, never below 1 ms.
TEST(HarvestCpuThrottleTest, QuotaIsVcoresTimesPeriodAtLeastOneMs) {
  EXPECT_EQ(cpuQuotaUs(1.5), 150000);
  EXPECT_EQ(cpuQuotaUs(0), 1000);
  EXPECT_EQ(cpuQuotaUs(-2), 1000);
}

}  // namespace
}  // namespace morpheus::nm
