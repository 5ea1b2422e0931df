// Harvesting end to end: a real RM, two NMs (three for the ranked fallback) each sharing its
// machine with a primary tenant whose agent writes its usage to a file
// (nm.harvest.source: file), and the DAG AM. A load spike of one primary
// tenant kills only the secondary containers on its node, newest first, with
// a diagnostic naming the primary tenant; the AM sees preemptions, not task
// failures (max_attempts 1 would fail the job otherwise), the tasks rerun
// where there is room and the job finishes.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "harness.h"
#include "store/state/state_store.h"

namespace morpheus::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

class HarvestIT : public ClusterTest {
 protected:
  // The tenant's agent: write a temp file, then rename (the documented way).
  static void writeUsage(const std::string& path, double cpu, int64_t mem) {
    std::string tmp = path + ".tmp";
    std::ofstream(tmp) << "# written by the primary tenant's agent\ncpu_vcores " << cpu
                       << "\nmemory_mib " << mem << "\n";
    std::filesystem::rename(tmp, path);
  }
  // `cpu[i]`: the vcores nm<i+1>'s primary tenant uses at start (default 0.2).
  // Two NMs, or one per entry of `cpu` when it has more. `nm_extra`: more NM
  // arguments (every NM; a later --set wins).
  void startHarvestCluster(std::vector<std::string> rm_args = {}, std::vector<double> cpu = {},
                           std::vector<std::string> nm_extra = {}) {
    std::vector<std::string> args = {"--set", "rm.token-file=" + testTokenFile()};
    args.insert(args.end(), rm_args.begin(), rm_args.end());
    rm_ = Process::startDaemon("rm", rm_dir_.empty() ? freshDir("rm") : rm_dir_, args);
    ASSERT_FALSE(rm_.grpcAddress().empty()) << rm_.log();
    const int nodes = std::max(2, static_cast<int>(cpu.size()));
    for (int i = 0; i < nodes; i++) {
      std::string node = "nm" + std::to_string(i + 1);
      usage_.push_back(freshDir("tenant-" + node) + "/usage");
      writeUsage(usage_.back(),
                 i < static_cast<int>(cpu.size()) ? cpu[static_cast<size_t>(i)] : 0.2, 100);
      std::vector<std::string> nm_args = {"--rm",        rm_.grpcAddress(),
                                          "--node-id",   node,
                                          "--resources", "memory=4096,vcores=8",
                                          "--set",       "nm.monitor-interval=200ms",
                                          "--set",       "nm.heartbeat-interval=300ms",
                                          "--set",       "nm.harvest.source=file",
                                          "--set",       "nm.harvest.file=" + usage_.back(),
                                          "--set",       "nm.harvest.tenant=web-" + node,
                                          "--set",       "nm.harvest.reserve=memory=256,vcores=1",
                                          "--set",       "nm.harvest.interval=100ms"};
      for (auto& a : nmAuthArgs(node)) nm_args.push_back(std::move(a));
      nm_args.insert(nm_args.end(), nm_extra.begin(), nm_extra.end());
      nms_.push_back(Process::startDaemon("nm", freshDir("nm"), nm_args));
      ASSERT_FALSE(nms_.back().grpcAddress().empty()) << nms_.back().log();
    }
    ASSERT_TRUE(waitLiveNodes(nodes)) << rm_.log();
  }
  // A one-stage job of `tasks` tasks of 256 MiB and 1 vcore running
  // `command`, as a job file.
  std::string etlJob(int tasks, const std::string& command) {
    return writeJob(
        "name: nightly-etl\n"
        "stages:\n"
        "  - name: work\n"
        "    tasks: " +
        std::to_string(tasks) + "\n    command: \"" + command +
        "\"\n"
        "    resources: {memory_mib: 256, vcores: 1}\n");
  }
  // Submits `file` and waits up to `timeout` for the app to finish; its id.
  std::string runToEnd(const std::string& file, std::chrono::seconds timeout) {
    auto [code, out] = ctl({"app", "submit", file});
    EXPECT_EQ(code, 0) << out;
    std::string id = out.substr(0, out.find('\n'));
    EXPECT_TRUE(waitFinal(id, timeout)) << rm_.log();
    EXPECT_EQ(app(id)["state"], "FINISHED") << rm_.log();
    return id;
  }
  std::vector<std::string> usage_;
  std::string rm_dir_;  // the RM's data dir ("" = a fresh one)
};

TEST_F(HarvestIT, PrimarySpikeKillsOnlyItsNodesSecondaryContainersAndTheJobRecovers) {
  ASSERT_NO_FATAL_FAILURE(startHarvestCluster());
  std::string job = writeJob(
      "name: harvested\n"
      "stages:\n"
      "  - name: work\n"
      "    tasks: 8\n"
      "    command: \"sleep 3; echo done\"\n"
      "    resources: {memory_mib: 1024, vcores: 1}\n"
      "    max_attempts: 1\n");
  auto [code, out] = ctl({"app", "submit", job});
  ASSERT_EQ(code, 0) << out;
  std::string id = out.substr(0, out.find('\n'));
  // Wait until the node without the AM runs tasks.
  std::string am_node;
  int victim = -1;
  ASSERT_TRUE(waitFor(
      [&] {
        json a = app(id);
        if (a.is_discarded() || a["state"] != "RUNNING") return false;
        am_node = a["am_node_id"];
        auto [c, o] = ctl({"cluster", "status", "--json"});
        json s = json::parse(o, nullptr, false);
        for (const auto& n : s["nodes"]) {
          std::string nid = n["node_id"];
          if (nid != am_node && n["containers"].get<double>() >= 2) {
            victim = std::stoi(nid.substr(2)) - 1;
            return true;
          }
        }
        return false;
      },
      20s))
      << rm_.log();
  const size_t v = static_cast<size_t>(victim);
  const size_t other = 1 - v;
  // The primary tenant on the victim grows into all its memory.
  writeUsage(usage_[v], 1.0, 4000);
  const std::string tenant = "web-nm" + std::to_string(victim + 1);
  ASSERT_TRUE(waitFor(
      [&] {
        return nms_[v].log().find("harvest: killing secondary container") != std::string::npos;
      },
      10s))
      << nms_[v].log();
  ASSERT_TRUE(waitFinal(id, 60s)) << rm_.log();
  json a = app(id);
  EXPECT_EQ(a["state"], "FINISHED") << a.dump() << "\n" << rm_.log();
  // Only the spiking tenant's node killed, and only secondary containers.
  EXPECT_NE(nms_[v].log().find("the primary tenant '" + tenant + "' needed the resources"),
            std::string::npos)
      << nms_[v].log();
  EXPECT_EQ(nms_[other].log().find("harvest: killing"), std::string::npos) << nms_[other].log();
  // The AM saw preemptions with the NM's diagnostic and reran the tasks
  // without counting them as failed attempts.
  auto [cl, logs] = ctl({"app", "logs", id, "--stderr"});
  ASSERT_EQ(cl, 0) << logs;
  auto [co, stdout_logs] = ctl({"app", "logs", id});
  logs += stdout_logs;
  EXPECT_NE(logs.find("will rerun (not counted as a failed attempt): preempted"), std::string::npos)
      << logs;
  EXPECT_NE(logs.find("primary tenant '" + tenant + "' needed the resources"), std::string::npos)
      << logs;
  EXPECT_EQ(logs.find("failed attempt 1/"), std::string::npos) << logs;
}

// Containers of `app` the NM's log says it started: its tasks, or (`am`)
// its AM attempts.
int containersStarted(const std::string& log, const std::string& app, bool am) {
  int n = 0;
  const std::string tail = " of " + app + " started";
  for (size_t at = log.find(tail); at != std::string::npos; at = log.find(tail, at + 1)) {
    size_t line = log.rfind('\n', at);
    std::string head = log.substr(line == std::string::npos ? 0 : line, at - line);
    if ((head.find("_am") != std::string::npos) == am) n++;
  }
  return n;
}
// Task containers of `app` the NM's log shows started (its AM's excluded).
int tasksStarted(const std::string& log, const std::string& app) {
  return containersStarted(log, app, /*am=*/false);
}

// An NM that cannot read its primary tenant's usage offers nothing: with
// nm2's usage file gone, a job wider than nm1's offer runs all of its
// containers on nm1 (none on nm2, AM included, though nm2's last good
// sample left it 6 vcores); once the file is back, nm2 takes work again.
TEST_F(HarvestIT, NodeWhoseUsageCannotBeReadOffersNothingUntilItCanAgain) {
  ASSERT_NO_FATAL_FAILURE(startHarvestCluster());
  std::filesystem::remove(usage_[1]);
  ASSERT_TRUE(
      waitFor([&] { return nms_[1].log().find("usage not sampled") != std::string::npos; }, 10s))
      << nms_[1].log();
  std::this_thread::sleep_for(1s);  // past the staleness bound and a few heartbeats
  std::string blind = runToEnd(etlJob(10, "sleep 2"), 90s);
  EXPECT_EQ(tasksStarted(nms_[0].log(), blind), 10) << nms_[0].log();
  EXPECT_EQ(tasksStarted(nms_[1].log(), blind), 0) << nms_[1].log();
  EXPECT_EQ(containersStarted(nms_[1].log(), blind, /*am=*/true), 0) << nms_[1].log();
  writeUsage(usage_[1], 0.2, 100);
  std::string seen = runToEnd(etlJob(10, "sleep 3"), 90s);
  EXPECT_GT(tasksStarted(nms_[1].log(), seen), 0) << nms_[1].log() << rm_.log();
}

// OSDI'16 §4.1: the RM clusters the primary tenants (a short
// rm.harvest.cluster-every here) into a busy constant class (nm1: 4 of 8
// vcores) and an idle one (nm2); `cluster status` shows them. A job whose
// last run was long (rm.harvest.long-min 500 ms) and that needs 5 concurrent
// containers fits only the idle class's headroom (busy: (1 - 0.5) x 8 = 4
// slots), so all its tasks run on nm2 although nm1 has room for 3.
TEST_F(HarvestIT, LongJobRunsOnTheClassWithHeadroom) {
  ASSERT_NO_FATAL_FAILURE(
      startHarvestCluster({"--set", "rm.harvest.cluster-every=1s", "--set",
                           "rm.harvest.short-max=100ms", "--set", "rm.harvest.long-min=500ms"},
                          {4.0, 0.1}));
  auto job = [this](int tasks) { return etlJob(tasks, "sleep 2"); };
  auto run = [this](const std::string& file) { return runToEnd(file, 20s); };
  run(job(1));  // the job's first run: its length (> 2 s) makes it long
  json classes;
  std::map<std::string, std::string> class_of;
  ASSERT_TRUE(waitFor(
      [&] {
        auto [c, o] = ctl({"cluster", "status", "--json"});
        json s = json::parse(o, nullptr, false);
        if (s.is_discarded() || s["harvest_classes"].size() != 2) return false;
        classes = s["harvest_classes"];
        for (const auto& n : s["nodes"]) class_of[n["node_id"]] = n["harvest_class"];
        return !class_of["nm1"].empty() && !class_of["nm2"].empty();
      },
      10s))
      << rm_.log();
  ASSERT_NE(class_of["nm1"], class_of["nm2"]);
  for (const auto& c : classes) {
    EXPECT_EQ(c["pattern"], "constant") << c.dump();
    EXPECT_EQ(c["nodes"], 1) << c.dump();
    std::string node = c["node_ids"][0];
    EXPECT_NEAR(c["peak"].get<double>(), node == "nm1" ? 0.5 : 0.0125, 0.01) << c.dump();
  }
  // The same classes on the RM's REST port (a token is needed).
  auto rest = httpRequest(rm_.httpAddress(), "GET", "/ws/v1/cluster/harvest-classes", "",
                          "application/json", bearer("alice"));
  ASSERT_EQ(rest.status, 200) << rest.body;
  json listed = json::parse(rest.body, nullptr, false)["harvestClasses"]["harvestClass"];
  ASSERT_EQ(listed.size(), 2u) << rest.body;
  for (const auto& c : listed) {
    ASSERT_EQ(c["nodeIds"].size(), 1u) << c.dump();
    EXPECT_EQ(c["id"], class_of[c["nodeIds"][0].get<std::string>()]) << c.dump();
    EXPECT_EQ(c["pattern"], "constant") << c.dump();
  }
  EXPECT_EQ(httpRequest(rm_.httpAddress(), "GET", "/ws/v1/cluster/harvest-classes", "",
                        "application/json", {})
                .status,
            401);
  auto [tc, table] = ctl({"cluster", "status"});
  EXPECT_NE(table.find("HARVEST CLASS"), std::string::npos) << table;
  EXPECT_NE(table.find(class_of["nm2"]), std::string::npos) << table;
  EXPECT_NE(table.find("Harvesting classes"), std::string::npos) << table;

  std::string id = run(job(5));
  EXPECT_NE(rm_.log().find(id + " (long job 'nightly-etl', 5 concurrent container(s)"),
            std::string::npos)
      << rm_.log();
  EXPECT_EQ(tasksStarted(nms_[0].log(), id), 0) << nms_[0].log();
  EXPECT_EQ(tasksStarted(nms_[1].log(), id), 5) << nms_[1].log();
}

// The ranked fallback (OSDI'16 §4.1's combining order): three constant
// classes, nm1 idle (0.1 of 8 vcores), nm2 at 2.2, nm3 at 5.0, and an NM
// reserve of 2 vcores. A long job of 6 concurrent containers fits only nm1's
// class by Algorithm 1 (7 under its peak, 6 with the AM there; nm2's holds
// 5, nm3's 3), but nm1 offers 5 vcores now (8 - 0.1 - 2), 4 with the AM, so
// one or two containers find no room. The RM then adds the class ranked
// next, before the scheduler's soft-constraint delay (3 s) would let them
// go anywhere: all constant (the same weight), nm2's node has the most room
// under its peak (5.8 containers against nm3's 3), so they run on nm2 and
// none on nm3, which has room for one now. The first clustering runs 10 s
// after the RM starts and the next 10 s later, so no re-selection comes
// between the job's asks and its placement.
TEST_F(HarvestIT, FullClassFallsBackToTheNextRankedClass) {
  ASSERT_NO_FATAL_FAILURE(
      startHarvestCluster({"--set", "rm.harvest.cluster-every=10s", "--set",
                           "rm.harvest.short-max=100ms", "--set", "rm.harvest.long-min=500ms"},
                          {0.1, 2.2, 5.0}, {"--set", "nm.harvest.reserve=memory=256,vcores=2"}));
  auto job = [this](int tasks) { return etlJob(tasks, "sleep 5"); };
  auto run = [this](const std::string& file) { return runToEnd(file, 40s); };
  run(job(1));  // before the classes: its length (> 5 s) makes the job long
  std::map<std::string, std::string> class_of;
  ASSERT_TRUE(waitFor(
      [&] {
        auto [c, o] = ctl({"cluster", "status", "--json"});
        json s = json::parse(o, nullptr, false);
        if (s.is_discarded() || s["harvest_classes"].size() != 3) return false;
        for (const auto& n : s["nodes"]) class_of[n["node_id"]] = n["harvest_class"];
        return !class_of["nm1"].empty() && !class_of["nm2"].empty() && !class_of["nm3"].empty();
      },
      20s))
      << rm_.log();
  std::string id = run(job(6));
  const std::string log = rm_.log();
  const size_t chose = log.find(id + " (long job 'nightly-etl', 6 concurrent container(s)");
  ASSERT_NE(chose, std::string::npos) << log;
  const std::string line = log.substr(chose, log.find('\n', chose) - chose);
  const std::string want = "prefers classes " + class_of["nm1"];  // nm1's alone
  EXPECT_EQ(line.substr(line.size() - std::min(line.size(), want.size())), want) << line;
  EXPECT_NE(
      log.find(id + " (long job 'nightly-etl'): classes " + class_of["nm1"] + " have no room"),
      std::string::npos)
      << log;
  EXPECT_NE(log.find("falls back to class " + class_of["nm2"] + " (ranked)"), std::string::npos)
      << log;
  const int on1 = tasksStarted(nms_[0].log(), id), on2 = tasksStarted(nms_[1].log(), id);
  EXPECT_GE(on1, 4) << nms_[0].log();
  EXPECT_GE(on2, 1) << nms_[1].log();
  EXPECT_EQ(on1 + on2, 6);
  EXPECT_EQ(tasksStarted(nms_[2].log(), id), 0) << nms_[2].log();
}

// A tenant's usage series as the RM saves it in table harvest-usage (see
// encodeTenantUsage): one bucket a minute over the cpu.size() minutes before
// the current one, the CPU as given, memory at 0.1.
std::string usageRecord(const std::vector<double>& cpu) {
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const int64_t first = (now / 60000 - static_cast<int64_t>(cpu.size())) * 60000;
  json c = json::array(), m = json::array();
  for (size_t i = 0; i < cpu.size(); i++) {
    const int64_t at = first + static_cast<int64_t>(i) * 60000;
    c.push_back(json::array({at, cpu[i], cpu[i], 1}));
    m.push_back(json::array({at, 0.1, 0.1, 1}));
  }
  return json{{"cpu", {{"step_ms", 60000}, {"buckets", c}}},
              {"memory", {{"step_ms", 60000}, {"buckets", m}}}}
      .dump();
}

// The hold (rm.harvest.hold, default 1 day) with real daemons. The RM
// starts with forty minutes of its tenants' usage in its state store, as a
// restarted RM finds it: nm1's tenant jumps at random between 1 and 7.5 of
// 8 vcores, nm2's stays at 1. Now nm1's primary uses 1 vcore (its NM offers
// 6) and nm2's 7.5 (its NM offers nothing). The job's task, expected to
// run 2 minutes (expected_task_ms), is predicted a throttle on nm1 (1/8 now
// plus a rise of 6.5/8 within 2 minutes) and has no room on nm2: it is held,
// and nm1 runs none of it however long past the scheduler's
// soft-constraint delay. Once nm2's primary drops back to 1 vcore, nm2 is
// predicted to fit, the task runs there and the job finishes.
TEST_F(HarvestIT, HoldKeepsTheJobOffANodeWhoseHistoryPredictsAThrottle) {
  rm_dir_ = freshDir("rm");
  {
    std::mt19937 rng(7);
    std::vector<double> bursty, steady(40, 1.0 / 8);
    for (int i = 0; i < 40; i++) bursty.push_back(rng() % 100 < 45 ? 7.5 / 8 : 1.0 / 8);
    auto store = store::openStateStore("sqlite", rm_dir_ + "/rm-state.db");
    ASSERT_TRUE(store.isOk()) << store.status().toString();
    ASSERT_TRUE((*store)
                    ->commit({{"harvest-usage", "web-nm1", usageRecord(bursty)},
                              {"harvest-usage", "web-nm2", usageRecord(steady)}})
                    .isOk());
  }
  // The job's AM starts on nm1: nm2's NM offers no vcores.
  ASSERT_NO_FATAL_FAILURE(
      startHarvestCluster({"--set", "rm.harvest.cluster-every=10s"}, {1.0, 7.5}));
  std::string job = writeJob(
      "name: nightly-etl\n"
      "stages:\n"
      "  - name: work\n"
      "    tasks: 1\n"
      "    command: \"sleep 1\"\n"
      "    expected_task_ms: 120000\n"
      "    resources: {memory_mib: 256, vcores: 1}\n");
  auto [code, out] = ctl({"app", "submit", job});
  ASSERT_EQ(code, 0) << out;
  std::string id = out.substr(0, out.find('\n'));
  ASSERT_TRUE(waitFor(
      [&] {
        return rm_.log().find(id + " (medium job 'nightly-etl', container") != std::string::npos &&
               rm_.log().find("; held for at most") != std::string::npos;
      },
      30s))
      << rm_.log();
  std::this_thread::sleep_for(6s);  // twice the soft-constraint delay, many heartbeats
  EXPECT_EQ(app(id)["state"], "RUNNING") << rm_.log();
  EXPECT_EQ(tasksStarted(nms_[0].log(), id), 0) << nms_[0].log();
  EXPECT_EQ(tasksStarted(nms_[1].log(), id), 0) << nms_[1].log();
  writeUsage(usage_[1], 1.0, 100);
  ASSERT_TRUE(waitFinal(id, 40s)) << rm_.log();
  EXPECT_EQ(app(id)["state"], "FINISHED") << rm_.log();
  EXPECT_NE(rm_.log().find("predicted to fit; released after"), std::string::npos) << rm_.log();
  EXPECT_EQ(tasksStarted(nms_[0].log(), id), 0) << nms_[0].log();
  EXPECT_EQ(tasksStarted(nms_[1].log(), id), 1) << nms_[1].log();
  EXPECT_EQ(containersStarted(nms_[1].log(), id, /*am=*/true), 0) << nms_[1].log();
}

int64_t nrThrottled(const std::string& cgroup) {
  std::ifstream f(cgroup + "/cpu.stat");
  std::string key;
  int64_t value = 0;
  while (f >> key >> value) {
    if (key == "nr_throttled") return value;
  }
  return -1;
}

// Why this machine cannot throttle a container's CPU through cgroups, or ""
// when it can: as root, a writable cgroup v1 cpu controller at
// /sys/fs/cgroup/cpu, or a cgroup v2 hierarchy at /sys/fs/cgroup with the cpu
// controller and a writable subtree_control.
std::string whyNoCpuCgroup() {
  if (::geteuid() != 0) {
    return "not root: the NM cannot create or write the cgroups it throttles containers in";
  }
  if (::access("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", W_OK) == 0) return "";
  std::string v2_controllers;
  std::getline(std::ifstream("/sys/fs/cgroup/cgroup.controllers"), v2_controllers);
  if (v2_controllers.find("cpu") == std::string::npos) {
    return "neither a writable cgroup v1 cpu controller at /sys/fs/cgroup/cpu nor a cgroup v2 "
           "cpu controller at /sys/fs/cgroup";
  }
  if (::access("/sys/fs/cgroup/cgroup.subtree_control", W_OK) != 0) {
    return "/sys/fs/cgroup/cgroup.subtree_control is not writable (a read-only cgroup mount)";
  }
  return "";
}

// OSDI'16 §3: when the primary tenant's CPU grows into what a
// busy secondary container uses, the NM throttles the container (here with a
// long nm.harvest.cpu-kill-after, so it is not killed) through the cgroup
// cpu controller it found, and the kernel's nr_throttled in the container's
// cgroup (cpu.stat, v1 or v2) grows. The app is killed and the NM stopped:
// the v1 cgroups it created are gone.
TEST_F(HarvestIT, PrimaryCpuGrowthThrottlesTheSecondaryContainer) {
  if (const std::string why = whyNoCpuCgroup(); !why.empty()) GTEST_SKIP() << why;
  ASSERT_NO_FATAL_FAILURE(startHarvestCluster({}, {}, {"--set", "nm.harvest.cpu-kill-after=60s"}));
  ASSERT_NE(nms_[0].log().find("CPU-throttled through"), std::string::npos) << nms_[0].log();
  std::string job = writeJob(
      "name: spinner\n"
      "stages:\n"
      "  - name: spin\n"
      "    tasks: 1\n"
      "    command: \"while :; do :; done\"\n"
      "    resources: {memory_mib: 256, vcores: 1}\n");
  auto [code, out] = ctl({"app", "submit", job});
  ASSERT_EQ(code, 0) << out;
  std::string id = out.substr(0, out.find('\n'));
  size_t node = 0;
  ASSERT_TRUE(waitFor(
      [&] {
        for (size_t i = 0; i < nms_.size(); i++) {
          if (tasksStarted(nms_[i].log(), id) == 1) {
            node = i;
            return true;
          }
        }
        return false;
      },
      20s))
      << rm_.log();
  // The primary grows to 7.5 of 8 vcores: with the 1-vcore reserve, nothing is left.
  writeUsage(usage_[node], 7.5, 100);
  ASSERT_TRUE(waitFor(
      [&] { return nms_[node].log().find("secondary CPU throttled") != std::string::npos; }, 10s))
      << nms_[node].log();
  const std::string v1_root = "/sys/fs/cgroup/cpu/morpheus-harvest-web-nm" +
                              std::to_string(node + 1) + "-" + std::to_string(nms_[node].pid());
  // Where the container cgroups are: v1, the NM's own group below the cpu
  // controller; v2, the runtime's container cgroups (the NM names the parent).
  std::string parent;
  const std::string log = nms_[node].log();
  const std::string v2_marker = "CPU-throttled through cgroup v2 cpu.max under ";
  if (log.find("through cgroup v1") != std::string::npos) {
    parent = v1_root;
  } else if (auto at = log.find(v2_marker); at != std::string::npos) {
    at += v2_marker.size();
    parent = log.substr(at, log.find_first_of(" \r\n", at) - at);
  }
  ASSERT_FALSE(parent.empty()) << "no cgroup v1 or v2 throttle in the NM's log\n" << log;
  std::string cg;
  for (const auto& e : std::filesystem::directory_iterator(parent)) {
    if (e.is_directory() && e.path().filename().string().find("_am") == std::string::npos &&
        std::filesystem::exists(e.path() / "cpu.stat")) {
      cg = e.path().string();
    }
  }
  ASSERT_FALSE(cg.empty()) << "no container cgroup below " << parent;
  ASSERT_TRUE(waitFor([&] { return nrThrottled(cg) > 0; }, 10s))
      << cg << "/cpu.stat: nr_throttled " << nrThrottled(cg);
  EXPECT_EQ(nms_[node].log().find("harvest: killing"), std::string::npos) << nms_[node].log();
  ASSERT_EQ(ctl({"app", "kill", id}).first, 0);
  ASSERT_TRUE(waitFinal(id, 20s)) << rm_.log();
  ASSERT_TRUE(waitFor(
      [&] { return nms_[node].log().find(" completed: status") != std::string::npos; }, 20s))
      << nms_[node].log();
  for (auto& nm : nms_) EXPECT_EQ(nm.signalAndWait(SIGTERM, 20s), 0) << nm.log();
  EXPECT_FALSE(std::filesystem::exists(v1_root)) << v1_root;
}

}  // namespace
}  // namespace morpheus::testing
