// Harvesting on the NM: the primary tenant's usage sources (file,
// cgroup v1/v2 on stand-in directories, a process set on a stand-in /proc)
// and the throttle-then-kill policy that keeps secondary containers inside
// what the primary leaves.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "nodemanager/harvest_guard.h"
#include "nodemanager/primary_usage.h"

namespace morpheus::nm {
namespace {

using namespace std::chrono_literals;

std::string tempDir(const std::string& tag) {
  auto d = std::filesystem::temp_directory_path() /
           ("morpheus-harvest-" + std::to_string(::getpid()) + "-" + tag);
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d.string();
}

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

SecondaryContainer sc(const std::string& id, int64_t mem, int64_t vc, int64_t start_ms) {
  return {ContainerId(id), Resource(mem, vc), fromEpochMs(start_ms)};
}

// The documented file format parses; comments and blank lines are ignored.
TEST(PrimaryUsageFileTest, ParsesBothKeysWithComments) {
  auto u = parsePrimaryUsageFile("# agent v1\ncpu_vcores 2.5\n\nmemory_mib 3072 # now\n");
  ASSERT_TRUE(u.isOk()) << u.status().message();
  EXPECT_DOUBLE_EQ(u->cpu_vcores, 2.5);
  EXPECT_EQ(u->memory_mib, 3072);
}

// Malformed files are refused with the option and the key named.
TEST(PrimaryUsageFileTest, RejectsMissingNegativeAndUnknownKeys) {
  auto missing = parsePrimaryUsageFile("cpu_vcores 1\n");
  ASSERT_FALSE(missing.isOk());
  EXPECT_NE(missing.status().message().find("memory_mib missing"), std::string::npos);
  auto negative = parsePrimaryUsageFile("cpu_vcores -1\nmemory_mib 5\n");
  ASSERT_FALSE(negative.isOk());
  EXPECT_NE(negative.status().message().find("nm.harvest.file"), std::string::npos);
  EXPECT_NE(negative.status().message().find("cpu_vcores"), std::string::npos);
  EXPECT_FALSE(parsePrimaryUsageFile("cpu_vcores 1\nmemory_mib 5\ndisk 3\n").isOk());
  EXPECT_FALSE(parsePrimaryUsageFile("cpu_vcores 1x\nmemory_mib 5\n").isOk());
}

// A cgroup v2 directory yields memory.current and the CPU rate between samples.
TEST(PrimaryUsageSourceTest, CgroupV2RateFromUsageUsec) {
  std::string d = tempDir("cg2");
  write(d + "/cpu.stat", "usage_usec 1000000\nuser_usec 1\n");
  write(d + "/memory.current", std::to_string(2048LL * 1024 * 1024));
  auto src = makeCgroupUsageSource(d);
  auto first = src->sample(fromEpochMs(10000));
  ASSERT_TRUE(first.isOk());
  EXPECT_EQ(first->memory_mib, 2048);
  EXPECT_DOUBLE_EQ(first->cpu_vcores, 0);          // no rate yet
  write(d + "/cpu.stat", "usage_usec 4000000\n");  // 3 CPU-seconds in 2 s
  auto second = src->sample(fromEpochMs(12000));
  ASSERT_TRUE(second.isOk());
  EXPECT_DOUBLE_EQ(second->cpu_vcores, 1.5);
  std::filesystem::remove_all(d);
}

// Without the v2 files the v1 ones (cpuacct.usage in ns) are read.
TEST(PrimaryUsageSourceTest, CgroupV1Fallback) {
  std::string d = tempDir("cg1");
  write(d + "/cpuacct.usage", "0");
  write(d + "/memory.usage_in_bytes", std::to_string(100LL * 1024 * 1024));
  auto src = makeCgroupUsageSource(d);
  ASSERT_TRUE(src->sample(fromEpochMs(0)).isOk());
  write(d + "/cpuacct.usage", "2000000000");
  auto u = src->sample(fromEpochMs(1000));
  ASSERT_TRUE(u.isOk());
  EXPECT_DOUBLE_EQ(u->cpu_vcores, 2.0);
  EXPECT_EQ(u->memory_mib, 100);
  std::filesystem::remove_all(d);
  EXPECT_FALSE(src->sample(fromEpochMs(2000)).isOk());  // cgroup gone: UNAVAILABLE
}

// The cgroup reader on stand-in trees: v2 (cpu.stat's usage_usec and
// memory.current) wins over v1 files in the same directory; a counter that
// went backwards (the cgroup was recreated) reads as 0, not negative; a
// directory missing either v2 file and the v1 pair, one whose cpu.stat has no
// usage_usec, or no directory at all is UNAVAILABLE naming the option and the
// directory, and a later good sample works again.
TEST(PrimaryUsageSourceTest, CgroupReaderPrefersV2AndNamesTheDirectoryOnErrors) {
  std::string d = tempDir("cgread");
  write(d + "/cpu.stat", "user_usec 5\nusage_usec 2000000\nsystem_usec 7\n");
  write(d + "/memory.current", std::to_string(512LL * 1024 * 1024) + "\n");
  write(d + "/cpuacct.usage", "999000000000");
  write(d + "/memory.usage_in_bytes", std::to_string(4096LL * 1024 * 1024));
  auto src = makeCgroupUsageSource(d);
  auto first = src->sample(fromEpochMs(0));
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  EXPECT_EQ(first->memory_mib, 512) << "memory.current, not memory.usage_in_bytes";
  write(d + "/cpu.stat", "usage_usec 2500000\n");
  auto second = src->sample(fromEpochMs(1000));
  ASSERT_TRUE(second.isOk());
  EXPECT_DOUBLE_EQ(second->cpu_vcores, 0.5) << "from usage_usec, not cpuacct.usage";
  write(d + "/cpu.stat", "usage_usec 100\n");  // recreated
  auto back = src->sample(fromEpochMs(2000));
  ASSERT_TRUE(back.isOk());
  EXPECT_DOUBLE_EQ(back->cpu_vcores, 0);

  auto expectUnavailable = [&](const std::string& dir, const std::string& what) {
    auto r = makeCgroupUsageSource(dir)->sample(fromEpochMs(0));
    ASSERT_FALSE(r.isOk()) << what;
    EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << what;
    EXPECT_NE(r.status().message().find("nm.harvest.cgroup"), std::string::npos) << what;
    EXPECT_NE(r.status().message().find("'" + dir + "'"), std::string::npos)
        << what << ": " << r.status().message();
  };
  std::filesystem::remove(d + "/cpuacct.usage");
  std::filesystem::remove(d + "/memory.usage_in_bytes");
  std::filesystem::remove(d + "/memory.current");
  expectUnavailable(d, "no memory.current");
  write(d + "/memory.current", "1048576");
  write(d + "/cpu.stat", "user_usec 5\nsystem_usec 7\n");
  expectUnavailable(d, "cpu.stat without usage_usec");
  std::filesystem::remove(d + "/cpu.stat");
  expectUnavailable(d, "no cpu.stat");
  expectUnavailable(d + "/gone", "no directory");
  write(d + "/cpu.stat", "usage_usec 3000000\n");
  auto again = src->sample(fromEpochMs(3000));
  ASSERT_TRUE(again.isOk()) << again.status().toString();
  EXPECT_EQ(again->memory_mib, 1);
  std::filesystem::remove_all(d);
}

// The file source names the option and the path it cannot read.
TEST(PrimaryUsageSourceTest, FileSourceNamesTheUnreadablePath) {
  std::string d = tempDir("usagefile");
  auto r = makeFileUsageSource(d + "/usage")->sample(fromEpochMs(0));
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("nm.harvest.file: cannot read '" + d + "/usage'"),
            std::string::npos)
      << r.status().message();
  std::filesystem::remove_all(d);
}

// Only processes with a listed comm count, summing RSS and CPU ticks.
TEST(PrimaryUsageSourceTest, ProcessSetSumsNamedProcesses) {
  std::string d = tempDir("proc");
  const long tick = sysconf(_SC_CLK_TCK);
  const long page = sysconf(_SC_PAGESIZE);
  auto proc = [&](int pid, const std::string& comm, long ticks, long rss_pages) {
    std::string p = d + "/" + std::to_string(pid);
    std::filesystem::create_directories(p);
    write(p + "/comm", comm + "\n");
    // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt
    // cmajflt utime stime cutime cstime prio nice threads itreal starttime vsize rss
    write(p + "/stat", std::to_string(pid) + " (" + comm + ") S 1 1 1 0 0 0 0 0 0 0 " +
                           std::to_string(ticks) + " 0 0 0 20 0 1 0 5 1000 " +
                           std::to_string(rss_pages) + "\n");
  };
  long pages_per_mib = 1024 * 1024 / page;
  proc(10, "websearch", 0, 100 * pages_per_mib);
  proc(11, "websearch", 0, 50 * pages_per_mib);
  proc(12, "batch", 0, 999 * pages_per_mib);
  auto src = makeProcessSetUsageSource({"websearch"}, d);
  auto a = src->sample(fromEpochMs(0));
  ASSERT_TRUE(a.isOk());
  EXPECT_EQ(a->memory_mib, 150);
  proc(10, "websearch", 2 * tick, 100 * pages_per_mib);
  proc(12, "batch", 50 * tick, 999 * pages_per_mib);
  auto b = src->sample(fromEpochMs(1000));
  ASSERT_TRUE(b.isOk());
  EXPECT_DOUBLE_EQ(b->cpu_vcores, 2.0);
  std::filesystem::remove_all(d);
}

// The offer is capacity - primary - reserve; nothing is killed while it fits.
TEST(HarvestPolicyTest, OfferLeavesReserveAndKillsNothingWhenFitting) {
  HarvestLimits lim{Resource(8192, 8), Resource(512, 1), 5s};
  auto d =
      decideHarvest(lim, "web", {2.4, 2048}, {sc("c1", 1024, 1, 1), sc("c2", 1024, 1, 2)}, 0ms);
  EXPECT_EQ(d.offer, Resource(8192 - 2048 - 512, 4));  // floor(8 - 1 - 2.4)
  EXPECT_TRUE(d.kill.empty());
  EXPECT_FALSE(d.throttle);
}

// A memory spike kills the newest secondary containers until the rest fit,
// with a diagnostic naming the primary tenant.
TEST(HarvestPolicyTest, MemorySpikeKillsNewestFirstAtOnce) {
  HarvestLimits lim{Resource(4096, 4), Resource(512, 1), 5s};
  std::vector<SecondaryContainer> run = {sc("old", 1024, 1, 100), sc("newest", 1024, 1, 300),
                                         sc("mid", 1024, 1, 200)};
  auto d = decideHarvest(lim, "web", {0, 1800}, run, 0ms);  // 4096-1800-512 = 1784 MiB left
  ASSERT_EQ(d.kill.size(), 2u);
  EXPECT_EQ(d.kill[0].value(), "newest");
  EXPECT_EQ(d.kill[1].value(), "mid");
  EXPECT_NE(d.why.find("primary tenant 'web' needed the resources"), std::string::npos) << d.why;
}

// CPU overlap throttles first and kills (newest first) only after cpu_kill_after.
TEST(HarvestPolicyTest, CpuOverlapThrottlesThenKillsAfterGrace) {
  HarvestLimits lim{Resource(8192, 4), Resource(0, 1), 5s};
  std::vector<SecondaryContainer> run = {sc("a", 256, 1, 1), sc("b", 256, 1, 2)};
  auto early = decideHarvest(lim, "web", {2.5, 0}, run, 1s);  // 0.5 vcores left for 2
  EXPECT_TRUE(early.throttle);
  EXPECT_TRUE(early.kill.empty());
  EXPECT_DOUBLE_EQ(early.cpu_left, 0.5);
  auto late = decideHarvest(lim, "web", {2.5, 0}, run, 5s);
  ASSERT_EQ(late.kill.size(), 2u);  // even one vcore does not fit in 0.5
  EXPECT_EQ(late.kill[0].value(), "b");
  auto partial = decideHarvest(lim, "web", {1.5, 0}, run, 6s);  // 1.5 left: one survives
  ASSERT_EQ(partial.kill.size(), 1u);
  EXPECT_EQ(partial.kill[0].value(), "b");
  EXPECT_FALSE(partial.throttle);
}

// makeHarvestMonitor names the option a source lacks; none builds nothing.
TEST(HarvestPolicyTest, MonitorConfigNamesMissingOption) {
  MetricsRegistry metrics;
  const std::string dir = tempDir("rt");
  ContainerRuntime rt(dir, 100ms, 100ms, metrics);
  VirtualClock clock;
  HarvestOptions o;
  auto none = makeHarvestMonitor(o, "n1", Resource(1024, 1), rt, metrics, clock);
  ASSERT_TRUE(none.isOk());
  EXPECT_EQ(none->get(), nullptr);
  o.source = "file";
  auto bad = makeHarvestMonitor(o, "n1", Resource(1024, 1), rt, metrics, clock);
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("nm.harvest.file"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace morpheus::nm
