// The CPU throttles of secondary containers (harvest_cpu.h) on stand-in
// directory trees laid out like cgroup hierarchies: which files each writes
// with which values, where processes go, and errors naming the path when a
// file or directory is missing or cannot be written. Throttling on a real
// kernel cgroup is in cgroup_kernel_test.cc (nm_kernel_tests).
#include "nodemanager/harvest_cpu.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "nodemanager/container_runtime.h"

namespace morpheus::nm {
namespace {

namespace fs = std::filesystem;

std::string tempTree(const std::string& tag) {
  auto d =
      fs::temp_directory_path() / ("morpheus-cputree-" + std::to_string(::getpid()) + "-" + tag);
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void touch(const std::string& path, const std::string& text = "") { std::ofstream(path) << text; }

// A child sleeping in a session of its own (a container's processes);
// killed and reaped on destruction.
class SessionLeader {
 public:
  SessionLeader() {
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setsid();
      for (;;) ::pause();
    }
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (sessionProcesses(pid_).empty() && std::chrono::steady_clock::now() < end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  ~SessionLeader() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

// A pid no process has (a child that has been reaped).
pid_t deadPid() {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

// cgroup v2: "<quota> <period>" into <parent>/<container>/cpu.max, the
// container cgroup the runtime made; "max <period>" lifts the cap.
TEST(HarvestCpuTreeTest, V2WritesCpuMaxOfTheContainersCgroup) {
  const std::string parent = tempTree("v2") + "/morpheus-nm";
  fs::create_directories(parent + "/c1");
  auto t = makeCgroupV2CpuThrottle(parent);
  EXPECT_NE(t->describe().find(parent), std::string::npos) << t->describe();
  ASSERT_TRUE(t->limit(ContainerId("c1"), 0, 0.5).isOk());
  EXPECT_EQ(slurp(parent + "/c1/cpu.max"), "50000 100000");
  ASSERT_TRUE(t->limit(ContainerId("c1"), 0, 2.0).isOk());
  EXPECT_EQ(slurp(parent + "/c1/cpu.max"), "200000 100000") << "replaced, not appended";
  ASSERT_TRUE(t->limit(ContainerId("c1"), 0, 0.0).isOk());
  EXPECT_EQ(slurp(parent + "/c1/cpu.max"), "1000 100000") << "at least 1 ms";
  ASSERT_TRUE(t->limit(ContainerId("c1"), 0, std::nullopt).isOk());
  EXPECT_EQ(slurp(parent + "/c1/cpu.max"), "max 100000");
  t->prune({});
  EXPECT_TRUE(fs::exists(parent + "/c1")) << "the runtime owns v2 container cgroups";
  fs::remove_all(fs::path(parent).parent_path());
}

// The quota is written only when the cap changes: a write refills the
// period's budget at once (the kernel resets the group's runtime to the new
// quota), so rewriting an unchanged cap at every monitor pass gave a capped
// container more CPU than its cap. Stand-in files are overwritten with a
// marker to see whether limit() wrote them again.
TEST(HarvestCpuTreeTest, QuotaIsWrittenOnlyWhenTheCapChanges) {
  const std::string parent = tempTree("v2same") + "/morpheus-nm";
  fs::create_directories(parent + "/c1");
  auto v2 = makeCgroupV2CpuThrottle(parent);
  ASSERT_TRUE(v2->limit(ContainerId("c1"), 0, 0.1).isOk());
  EXPECT_EQ(slurp(parent + "/c1/cpu.max"), "10000 100000");
  touch(parent + "/c1/cpu.max", "marker");
  ASSERT_TRUE(v2->limit(ContainerId("c1"), 0, 0.1).isOk());
  EXPECT_EQ(slurp(parent + "/c1/cpu.max"), "marker") << "same cap: not rewritten";
  ASSERT_TRUE(v2->limit(ContainerId("c1"), 0, std::nullopt).isOk());
  EXPECT_EQ(slurp(parent + "/c1/cpu.max"), "max 100000") << "a new cap is written";
  touch(parent + "/c1/cpu.max", "marker");
  v2->prune({});
  ASSERT_TRUE(v2->limit(ContainerId("c1"), 0, std::nullopt).isOk());
  EXPECT_EQ(slurp(parent + "/c1/cpu.max"), "max 100000") << "forgotten by prune: written again";
  fs::remove_all(fs::path(parent).parent_path());

  const std::string root = tempTree("v1same");
  const std::string group = root + "/morpheus-harvest-s";
  touch(root + "/cpu.cfs_quota_us", "-1");
  fs::create_directories(group);
  touch(group + "/cpu.cfs_quota_us", "-1");
  auto made = makeCgroupV1CpuThrottle(root, "morpheus-harvest-s");
  ASSERT_TRUE(made.isOk()) << made.status().toString();
  auto v1 = std::move(made).value();
  ASSERT_TRUE(v1->limit(ContainerId("c1"), 0, 0.1).isOk());
  EXPECT_EQ(slurp(group + "/c1/cpu.cfs_quota_us"), "10000");
  touch(group + "/c1/cpu.cfs_quota_us", "marker");
  touch(group + "/c1/cpu.cfs_period_us", "marker");
  ASSERT_TRUE(v1->limit(ContainerId("c1"), 0, 0.1).isOk());
  EXPECT_EQ(slurp(group + "/c1/cpu.cfs_quota_us"), "marker") << "same cap: not rewritten";
  EXPECT_EQ(slurp(group + "/c1/cpu.cfs_period_us"), "marker");
  ASSERT_TRUE(v1->limit(ContainerId("c1"), 0, 0.2).isOk());
  EXPECT_EQ(slurp(group + "/c1/cpu.cfs_quota_us"), "20000") << "a new cap is written";
  EXPECT_EQ(slurp(group + "/c1/cpu.cfs_period_us"), "100000");
  v1.reset();
  fs::remove_all(root);
}

// cgroup v2 errors: a container without its cgroup (missing directory) and a
// cpu.max that cannot be written are UNAVAILABLE naming the file; nothing is
// created in place of the missing cgroup.
TEST(HarvestCpuTreeTest, V2ErrorsNameTheFile) {
  const std::string parent = tempTree("v2err") + "/morpheus-nm";
  fs::create_directories(parent + "/c_blocked/cpu.max");  // a directory: open(O_WRONLY) fails
  auto t = makeCgroupV2CpuThrottle(parent);
  Status missing = t->limit(ContainerId("c_gone"), 0, 0.5);
  EXPECT_EQ(missing.code(), StatusCode::kUnavailable);
  EXPECT_NE(missing.message().find(parent + "/c_gone/cpu.max"), std::string::npos)
      << missing.message();
  EXPECT_FALSE(fs::exists(parent + "/c_gone"));
  Status blocked = t->limit(ContainerId("c_blocked"), 0, std::nullopt);
  EXPECT_EQ(blocked.code(), StatusCode::kUnavailable);
  EXPECT_NE(blocked.message().find(parent + "/c_blocked/cpu.max"), std::string::npos)
      << blocked.message();
  fs::remove_all(fs::path(parent).parent_path());
}

// cgroup v1 on a stand-in hierarchy (the kernel would fill a new cgroup with
// its control files; here the group's cpu.cfs_quota_us is put there by hand):
// limit() creates <root>/<group>/<container>, moves the session's process into
// its cgroup.procs and writes cpu.cfs_period_us and cpu.cfs_quota_us (-1 = no
// cap). prune() moves what is left in a forgotten container's cgroup back to
// <root>/cgroup.procs and keeps the live ones; the destructor forgets all.
TEST(HarvestCpuTreeTest, V1WritesPeriodQuotaAndMovesTheSessionsProcesses) {
  const std::string root = tempTree("v1");
  const std::string group = root + "/morpheus-harvest-t";
  touch(root + "/cpu.cfs_quota_us", "-1");
  fs::create_directories(group);
  touch(group + "/cpu.cfs_quota_us", "-1");
  auto made = makeCgroupV1CpuThrottle(root, "morpheus-harvest-t");
  ASSERT_TRUE(made.isOk()) << made.status().toString();
  auto t = std::move(made).value();
  EXPECT_NE(t->describe().find(group), std::string::npos) << t->describe();
  SessionLeader c1;
  ASSERT_FALSE(sessionProcesses(c1.pid()).empty());
  ASSERT_TRUE(t->limit(ContainerId("c1"), c1.pid(), 0.25).isOk());
  EXPECT_EQ(slurp(group + "/c1/cgroup.procs"), std::to_string(c1.pid()));
  EXPECT_EQ(slurp(group + "/c1/cpu.cfs_period_us"), "100000");
  EXPECT_EQ(slurp(group + "/c1/cpu.cfs_quota_us"), "25000");
  ASSERT_TRUE(t->limit(ContainerId("c1"), c1.pid(), std::nullopt).isOk());
  EXPECT_EQ(slurp(group + "/c1/cpu.cfs_quota_us"), "-1");
  // A container whose session is gone (0): its cgroup is made, nothing moved.
  ASSERT_TRUE(t->limit(ContainerId("c2"), 0, 1.0).isOk());
  EXPECT_FALSE(fs::exists(group + "/c2/cgroup.procs"));
  EXPECT_EQ(slurp(group + "/c2/cpu.cfs_quota_us"), "100000");
  touch(group + "/c2/cgroup.procs", "4242\n");  // a process the container started since
  t->prune({ContainerId("c1")});
  EXPECT_EQ(slurp(root + "/cgroup.procs"), "4242") << "c2's process moved back to the root";
  EXPECT_EQ(slurp(group + "/c1/cgroup.procs"), std::to_string(c1.pid())) << "c1 is live";
  t.reset();
  EXPECT_EQ(slurp(root + "/cgroup.procs"), std::to_string(c1.pid()))
      << "forgotten at destruction: c1's process moved back to the root";
  fs::remove_all(root);
}

// cgroup v1 errors name the path: no cpu controller at the root, a group the
// throttle may not write (probed, then removed: nothing left behind), a
// container cgroup that cannot be created, a control file that cannot be
// written.
TEST(HarvestCpuTreeTest, V1ErrorsNameThePath) {
  const std::string root = tempTree("v1err");
  auto no_cpu = makeCgroupV1CpuThrottle(root, "g");
  ASSERT_FALSE(no_cpu.isOk());
  EXPECT_EQ(no_cpu.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(no_cpu.status().message().find(root), std::string::npos) << no_cpu.status().message();
  EXPECT_FALSE(fs::exists(root + "/g"));
  auto nowhere = makeCgroupV1CpuThrottle(root + "/no-such-mount", "g");
  ASSERT_FALSE(nowhere.isOk());
  EXPECT_NE(nowhere.status().message().find(root + "/no-such-mount"), std::string::npos);

  touch(root + "/cpu.cfs_quota_us", "-1");
  // A plain new directory has no control files, as a group the kernel did
  // not make writable for this process would not.
  auto probe = makeCgroupV1CpuThrottle(root, "g");
  ASSERT_FALSE(probe.isOk());
  EXPECT_NE(probe.status().message().find(root + "/g/cpu.cfs_quota_us is not writable"),
            std::string::npos)
      << probe.status().message();
  EXPECT_FALSE(fs::exists(root + "/g")) << "the probe group was removed";

  fs::create_directories(root + "/g");
  touch(root + "/g/cpu.cfs_quota_us", "-1");
  auto made = makeCgroupV1CpuThrottle(root, "g");
  ASSERT_TRUE(made.isOk()) << made.status().toString();
  auto t = std::move(made).value();
  fs::create_directories(root + "/g/c_period/cpu.cfs_period_us");
  Status period = t->limit(ContainerId("c_period"), 0, 1.0);
  EXPECT_EQ(period.code(), StatusCode::kUnavailable);
  EXPECT_NE(period.message().find(root + "/g/c_period/cpu.cfs_period_us"), std::string::npos)
      << period.message();
  fs::create_directories(root + "/g/c_quota/cpu.cfs_quota_us");
  Status quota = t->limit(ContainerId("c_quota"), 0, 1.0);
  EXPECT_EQ(quota.code(), StatusCode::kUnavailable);
  EXPECT_NE(quota.message().find(root + "/g/c_quota/cpu.cfs_quota_us"), std::string::npos)
      << quota.message();
  // A file where the container's cgroup should go: the write below it fails.
  touch(root + "/g/c_file");
  Status file = t->limit(ContainerId("c_file"), 0, 1.0);
  EXPECT_EQ(file.code(), StatusCode::kUnavailable);
  EXPECT_NE(file.message().find(root + "/g/c_file/"), std::string::npos) << file.message();
  // The group itself replaced by a file: the container's cgroup cannot be made.
  fs::remove_all(root + "/g");
  touch(root + "/g");
  Status create = t->limit(ContainerId("c_new"), 0, 1.0);
  EXPECT_EQ(create.code(), StatusCode::kUnavailable);
  EXPECT_NE(create.message().find("cannot create " + root + "/g/c_new"), std::string::npos)
      << create.message();
  t.reset();
  fs::remove_all(root);
}

// Groups <root>/<prefix>...-<pid> of NMs that are gone are removed with
// their container cgroups; a live NM's group, a name without a pid and other
// prefixes are kept. Processes left in a container cgroup are moved back to
// <root>/cgroup.procs first (on this stand-in the listing file stays, so that
// group cannot be removed: the kernel's cgroupfs allows it).
TEST(HarvestCpuTreeTest, StaleGroupsOfDeadNmsAreRemovedOthersKept) {
  const std::string root = tempTree("stale");
  const std::string dead = std::to_string(deadPid());
  const std::string self = std::to_string(::getpid());
  fs::create_directories(root + "/morpheus-harvest-web-" + dead + "/c1");
  fs::create_directories(root + "/morpheus-harvest-web-" + self + "/c1");
  fs::create_directories(root + "/morpheus-harvest-web-nopid");
  fs::create_directories(root + "/other-" + dead);
  EXPECT_EQ(removeStaleCpuGroups(root, "morpheus-harvest-"), 1);
  EXPECT_FALSE(fs::exists(root + "/morpheus-harvest-web-" + dead));
  EXPECT_TRUE(fs::exists(root + "/morpheus-harvest-web-" + self + "/c1"));
  EXPECT_TRUE(fs::exists(root + "/morpheus-harvest-web-nopid"));
  EXPECT_TRUE(fs::exists(root + "/other-" + dead));

  const std::string busy = root + "/morpheus-harvest-web-" + std::to_string(deadPid());
  fs::create_directories(busy + "/c1");
  touch(busy + "/c1/cgroup.procs", "4242\n");
  removeStaleCpuGroups(root, "morpheus-harvest-");
  EXPECT_EQ(slurp(root + "/cgroup.procs"), "4242");
  EXPECT_EQ(removeStaleCpuGroups(root + "/missing", "morpheus-harvest-"), 0);
  fs::remove_all(root);
}

// Quotas: vcores x 100 ms, never below 1 ms.
TEST(HarvestCpuThrottleTest, QuotaIsVcoresTimesPeriodAtLeastOneMs) {
  EXPECT_EQ(cpuQuotaUs(1.5), 150000);
  EXPECT_EQ(cpuQuotaUs(0), 1000);
  EXPECT_EQ(cpuQuotaUs(-2), 1000);
}

}  // namespace
}  // namespace morpheus::nm
