// Queue and user limits, accounting, usage, history retention and `top`
// against a real RM and NMs on loopback with real DAG applications
// (docs/operator/configuration.md "Queue limits", docs/user/applications.md
// "Usage"). Each test keeps its jobs to a couple of seconds.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "harness.h"

namespace morpheus::testing {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;

class LimitsAccountingIT : public ClusterTest {
 protected:
  // A DAG job of `tasks` tasks of 256 MiB / 1 vcore, each running `command`.
  std::string job(const std::string& name, int tasks, const std::string& command) {
    return writeJob("name: " + name +
                    "\n"
                    "stages:\n"
                    "  - name: work\n"
                    "    tasks: " +
                    std::to_string(tasks) +
                    "\n"
                    "    command: \"" +
                    command +
                    "\"\n"
                    "    resources: {memory_mib: 256, vcores: 1}\n");
  }
  // `app submit` as `who`; the application id ("" and a failure when refused).
  std::string submit(const std::string& who, const std::string& file,
                     const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"app", "submit", file};
    args.insert(args.end(), extra.begin(), extra.end());
    auto [code, out] = ctlAs(who, args);
    EXPECT_EQ(code, 0) << out;
    return code == 0 ? out.substr(0, out.find('\n')) : "";
  }
  // Polls `cond` every 200 ms (each poll runs morpheusctl: no busy loop).
  static bool poll(const std::function<bool()>& cond, std::chrono::milliseconds timeout) {
    auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      if (cond()) return true;
      std::this_thread::sleep_for(200ms);
    }
    return cond();
  }
  std::string state(const std::string& id) {
    json a = app(id);
    return a.is_discarded() ? "" : a["state"].get<std::string>();
  }
  // GET `path` on the RM's HTTP port as alice.
  json rest(const std::string& path) {
    auto r = httpRequest(rm_.httpAddress(), "GET", path, "", "application/json", bearer("alice"));
    EXPECT_EQ(r.status, 200) << path << " " << r.body;
    return json::parse(r.body, nullptr, false);
  }
  json ctlJson(const std::string& who, const std::vector<std::string>& args) {
    auto [code, out] = ctlAs(who, args);
    EXPECT_EQ(code, 0) << out;
    return json::parse(out, nullptr, false);
  }
};

// scheduler.max-running-apps root.dev: 1. The second app is accepted and
// waits with the reason in `app status`, `app list`, the REST diagnostics and
// `top`; it starts only after the first finished.
TEST_F(LimitsAccountingIT, QueueMaxRunningAppsHoldsTheSecondAppUntilTheFirstEnds) {
  ASSERT_NO_FATAL_FAILURE(startCluster(1, {"--set", "scheduler.queues=root.dev=1,root.default=1",
                                           "--set", "scheduler.max-running-apps=root.dev=1"}));
  std::string first = submit("alice", job("first", 1, "sleep 2"), {"--queue", "root.dev"});
  std::string second = submit("alice", job("second", 1, "true"), {"--queue", "root.dev"});
  ASSERT_FALSE(second.empty());
  ASSERT_TRUE(poll([&] { return state(first) == "RUNNING"; }, 20s)) << rm_.log();
  json b = app(second);
  EXPECT_EQ(b["state"], "ACCEPTED") << b.dump();
  const std::string reason = b.value("waiting_reason", "");
  EXPECT_NE(reason.find("queue root.dev runs 1 of its 1"), std::string::npos) << b.dump();
  EXPECT_NE(reason.find("scheduler.max-running-apps"), std::string::npos) << b.dump();
  auto [sc, status_text] = ctl({"app", "status", second});
  EXPECT_NE(status_text.find("Waiting:       " + reason), std::string::npos) << status_text;
  auto [lc, list_text] = ctl({"app", "list"});
  EXPECT_NE(list_text.find(reason), std::string::npos) << list_text;
  json r = rest("/ws/v1/cluster/apps/" + second);
  EXPECT_EQ(r["app"]["state"], "ACCEPTED");
  EXPECT_EQ(r["app"]["diagnostics"].get<std::string>().rfind(reason, 0), 0u) << r.dump();
  // top --once: the queue with its limit and both apps.
  auto [tc, top] = ctl({"top", "--once"});
  EXPECT_EQ(tc, 0) << top;
  EXPECT_NE(top.find("root.dev"), std::string::npos) << top;
  EXPECT_NE(top.find("1 apps"), std::string::npos) << top;
  EXPECT_NE(top.find(first), std::string::npos) << top;
  EXPECT_NE(top.find(second), std::string::npos) << top;
  EXPECT_EQ(top.find("\x1b["), std::string::npos) << "--once prints no escape codes";
  json tj = ctlJson("alice", {"top", "--once", "--json"});
  ASSERT_FALSE(tj.is_discarded());
  bool dev = false;
  for (const auto& q : tj["queues"])
    dev = dev || (q["name"] == "root.dev" && q["max_running_apps"] == 1);
  EXPECT_TRUE(dev) << tj.dump();
  EXPECT_EQ(tj["applications"].size(), 2u) << tj.dump();

  ASSERT_TRUE(waitFinal(first, 30s)) << rm_.log();
  ASSERT_TRUE(waitFinal(second, 30s)) << rm_.log();
  json a = app(first);
  b = app(second);
  EXPECT_EQ(a["state"], "FINISHED");
  EXPECT_EQ(b["state"], "FINISHED") << b.dump();
  EXPECT_GE(b["start_ms"].get<int64_t>(), a["finish_ms"].get<int64_t>())
      << "the second started before the first finished";
  EXPECT_EQ(b.value("waiting_reason", "x"), "");
}

// The limits change without a restart: `admin reload` raises root.dev's
// max-running-apps from 1 to 2 while the first app still runs, and the
// waiting second app starts at once; a limit naming an unknown queue is
// refused naming it as written, and the limit in force stays.
TEST_F(LimitsAccountingIT, ReloadRaisesAQueueLimitAndTheWaitingAppStarts) {
  const std::string cfg = freshDir("limits-cfg") + "/rm.yaml";
  auto write = [&](const std::string& limits) {
    std::ofstream(cfg) << "scheduler.queues: {root.dev: 1, root.default: 1}\n"
                       << "scheduler.max-running-apps: " << limits << "\n";
  };
  write("{root.dev: 1}");
  ASSERT_NO_FATAL_FAILURE(startCluster(1, {"--config", cfg}));
  std::string first = submit("alice", job("first", 1, "sleep 60"), {"--queue", "root.dev"});
  std::string second = submit("alice", job("second", 1, "sleep 60"), {"--queue", "root.dev"});
  ASSERT_FALSE(second.empty());
  ASSERT_TRUE(poll([&] { return state(first) == "RUNNING"; }, 20s)) << rm_.log();
  EXPECT_NE(app(second).value("waiting_reason", "").find("runs 1 of its 1"), std::string::npos);

  write("{root.nope: 2}");
  auto [bc, bout] = ctlAs("ops", {"admin", "reload"});
  EXPECT_EQ(bc, 2) << bout;
  EXPECT_NE(bout.find("scheduler.max-running-apps.root.nope"), std::string::npos) << bout;
  EXPECT_EQ(state(second), "ACCEPTED") << "a refused reload changes no limit";

  write("{root.dev: 2}");
  auto [code, out] = ctlAs("ops", {"admin", "reload", "--json"});
  ASSERT_EQ(code, 0) << out << rm_.log();
  json r = json::parse(out, nullptr, false);
  ASSERT_FALSE(r.is_discarded()) << out;
  EXPECT_EQ(r["changed"], json({"scheduler.max-running-apps"})) << out;
  EXPECT_EQ(r["restart_required"], json::array()) << out;
  ASSERT_TRUE(poll([&] { return state(second) == "RUNNING"; }, 20s)) << rm_.log();
  EXPECT_EQ(state(first), "RUNNING") << "both run at once under the new limit";
  json tj = ctlJson("alice", {"top", "--once", "--json"});
  bool dev = false;
  for (const auto& q : tj["queues"])
    dev = dev || (q["name"] == "root.dev" && q["max_running_apps"] == 2);
  EXPECT_TRUE(dev) << tj.dump();
  EXPECT_EQ(ctl({"app", "kill", first}).first, 0);
  EXPECT_EQ(ctl({"app", "kill", second}).first, 0);
  EXPECT_TRUE(waitFinal(first, 30s));
  EXPECT_TRUE(waitFinal(second, 30s));
}

// scheduler.user-max-running-apps alice: 1, over every queue: alice's second
// app waits naming her limit while bob's starts at once.
TEST_F(LimitsAccountingIT, UserMaxRunningAppsHoldsOnlyThatUser) {
  ASSERT_NO_FATAL_FAILURE(startCluster(1, {"--set", "scheduler.user-max-running-apps=alice=1"}));
  std::string a1 = submit("alice", job("a1", 1, "sleep 3"));
  std::string a2 = submit("alice", job("a2", 1, "true"));
  std::string b1 = submit("bob", job("b1", 1, "true"));
  ASSERT_TRUE(poll([&] { return state(a1) == "RUNNING"; }, 20s)) << rm_.log();
  json w = app(a2);
  EXPECT_EQ(w["state"], "ACCEPTED");
  EXPECT_NE(w.value("waiting_reason", "").find("user alice runs 1 of their 1"), std::string::npos)
      << w.dump();
  ASSERT_TRUE(waitFinal(b1, 20s)) << "bob is not held by alice's limit";
  EXPECT_EQ(state(a2), "ACCEPTED") << "alice's second started while her first ran";
  ASSERT_TRUE(waitFinal(a1, 30s));
  ASSERT_TRUE(waitFinal(a2, 30s));
  EXPECT_GE(app(a2)["start_ms"].get<int64_t>(), app(a1)["finish_ms"].get<int64_t>());
}

// scheduler.max-resources root.dev: 768 MiB. An app asking for 4 tasks of 256
// MiB holds at most its AM and 2 tasks, and says why the rest wait.
TEST_F(LimitsAccountingIT, QueueMaxResourcesCapsTheAllocation) {
  ASSERT_NO_FATAL_FAILURE(
      startCluster(1, {"--set", "scheduler.queues=root.dev=1,root.default=1", "--set",
                       "scheduler.max-resources=root.dev=memory=768 vcores=8"}));
  std::string id = submit("alice", job("capped", 4, "sleep 3"), {"--queue", "root.dev"});
  ASSERT_TRUE(waitRunning(id, 3, 20s)) << rm_.log();
  int most = 0;
  std::string pending;
  poll(
      [&] {
        json a = app(id);
        most = std::max(most, a["running_containers"].get<int>());
        EXPECT_LE(a["used"]["memory_mib"].get<int64_t>(), 768) << a.dump();
        for (const auto& r : a["pending_reasons"]) pending = r.get<std::string>();
        return false;
      },
      1500ms);
  EXPECT_EQ(most, 3) << "the AM and two tasks fit in 768 MiB";
  EXPECT_NE(pending.find("queue root.dev"), std::string::npos) << pending;
  EXPECT_NE(pending.find("max-resources"), std::string::npos) << pending;
  json sched = rest("/ws/v1/cluster/scheduler");
  EXPECT_NE(sched.dump().find("\"maxResources\":{\"memory\":768,\"vCores\":8}"), std::string::npos)
      << sched.dump();
  auto [kc, ko] = ctl({"app", "kill", id});
  EXPECT_EQ(kc, 0) << ko;
  EXPECT_TRUE(waitFinal(id, 10s));
  // Its containers are stopped by the NM before the test ends.
  EXPECT_TRUE(poll([&] { return app(id)["running_containers"] == 0; }, 10s));
}

// memorySeconds / vcoreSeconds of a finished app match its containers x
// resources x measured run time, read the same in the CLI and REST, and
// survive an RM restart.
TEST_F(LimitsAccountingIT, AccountingMatchesTheContainersAndSurvivesARestart) {
  const std::string rm_dir = freshDir("rm");
  std::vector<std::string> rm_args = {"--set", "rm.token-file=" + testTokenFile()};
  rm_ = Process::startDaemon("rm", rm_dir, rm_args);
  ASSERT_FALSE(rm_.grpcAddress().empty()) << rm_.log();
  std::vector<std::string> nm_args = {
      "--rm",        rm_.grpcAddress(),      "--node-id", "nm1",
      "--resources", "memory=4096,vcores=4", "--set",     "nm.heartbeat-interval=300ms"};
  for (auto& a : nmAuthArgs("nm1")) nm_args.push_back(a);
  nm_dirs_.push_back(freshDir("nm"));
  nms_.push_back(Process::startDaemon("nm", nm_dirs_.back(), nm_args));
  ASSERT_TRUE(waitLiveNodes(1)) << rm_.log();

  // AM + 2 tasks of 256 MiB / 1 vcore; the tasks run 2 s each at once.
  std::string id = submit("alice", job("metered", 2, "sleep 2"));
  ASSERT_TRUE(waitFinal(id, 30s)) << rm_.log();
  // The AM container's end is reported by the NM's next heartbeat: settled
  // when two reads a heartbeat apart agree.
  int64_t mem = -1;
  ASSERT_TRUE(poll(
      [&] {
        int64_t now = app(id)["memory_seconds"].get<int64_t>();
        bool same = now == mem && app(id)["running_containers"] == 0;
        mem = now;
        return same;
      },
      10s));
  json a = app(id);
  const int64_t vcores = a["vcore_seconds"].get<int64_t>();
  const double run_s = (a["finish_ms"].get<int64_t>() - a["start_ms"].get<int64_t>()) / 1000.0;
  // The AM lives about the app's run, each task at least its 2 s sleep; every
  // container is at most the run plus the NM's exit report (a few heartbeats).
  const double low = 256 * (run_s + 2 * 2.0) * 0.9;
  const double high = 256 * 3 * (run_s + 1.5);
  EXPECT_GE(mem, low) << a.dump();
  EXPECT_LE(mem, high) << a.dump();
  // Every container is 256 MiB and 1 vcore: MiB-s = 256 x vcore-s.
  EXPECT_NEAR(static_cast<double>(mem), 256.0 * vcores, 256.0 * 3) << a.dump();
  json r = rest("/ws/v1/cluster/apps/" + id);
  EXPECT_EQ(r["app"]["memorySeconds"], mem) << r.dump();
  EXPECT_EQ(r["app"]["vcoreSeconds"], vcores) << r.dump();
  auto [sc, text] = ctl({"app", "status", id});
  EXPECT_NE(text.find("Usage:         " + std::to_string(mem) + " MiB-s, " +
                      std::to_string(vcores) + " vcore-s"),
            std::string::npos)
      << text;

  ASSERT_EQ(rm_.signalAndWait(SIGTERM, 20s), 0) << rm_.log();
  rm_ = Process::startDaemon("rm", rm_dir, rm_args);
  ASSERT_FALSE(rm_.grpcAddress().empty()) << rm_.log();
  json after = app(id);
  ASSERT_FALSE(after.is_discarded());
  EXPECT_EQ(after["memory_seconds"], mem) << after.dump();
  EXPECT_EQ(after["vcore_seconds"], vcores) << after.dump();
}

// `usage --by user|queue`: totals of the apps' memory- and vcore-seconds; a
// user sees their own, an admin everyone's.
TEST_F(LimitsAccountingIT, UsageTotalsPerUserAndQueue) {
  ASSERT_NO_FATAL_FAILURE(startCluster(1, {"--set", "scheduler.queues=root.dev=1,root.default=1"}));
  std::string a1 = submit("alice", job("u1", 1, "sleep 1"), {"--queue", "root.dev"});
  std::string a2 = submit("alice", job("u2", 1, "true"));
  std::string b1 = submit("bob", job("u3", 1, "true"), {"--queue", "root.dev"});
  for (const auto& id : {a1, a2, b1}) ASSERT_TRUE(waitFinal(id, 30s)) << rm_.log();
  // Settled: no container of theirs is still running.
  ASSERT_TRUE(poll(
      [&] {
        for (const auto& id : {a1, a2, b1}) {
          if (app(id)["running_containers"] != 0) return false;
        }
        return true;
      },
      10s));
  auto mem = [&](const std::string& id) { return app(id)["memory_seconds"].get<int64_t>(); };
  auto vc = [&](const std::string& id) { return app(id)["vcore_seconds"].get<int64_t>(); };
  const int64_t m1 = mem(a1), m2 = mem(a2), m3 = mem(b1);
  ASSERT_GT(m1, 0);

  json mine = ctlJson("alice", {"usage", "--by", "user", "--since", "1d", "--json"});
  ASSERT_EQ(mine["users"].size(), 1u) << mine.dump();
  EXPECT_EQ(mine["users"][0]["user"], "alice");
  EXPECT_EQ(mine["users"][0]["apps"], 2);
  // Each app's figure is rounded down to whole seconds, the sum once.
  EXPECT_NEAR(mine["users"][0]["memory_seconds"].get<int64_t>(), m1 + m2, 1) << mine.dump();
  EXPECT_NEAR(mine["users"][0]["vcore_seconds"].get<int64_t>(), vc(a1) + vc(a2), 1);
  EXPECT_EQ(mine["user"], "alice");

  json all = ctlJson("ops", {"usage", "--by", "user", "--json"});
  ASSERT_EQ(all["users"].size(), 2u) << all.dump();
  EXPECT_TRUE(all["user"].is_null());
  json queues = ctlJson("ops", {"usage", "--by", "queue", "--json"});
  ASSERT_EQ(queues["queues"].size(), 2u) << queues.dump();
  for (const auto& q : queues["queues"]) {
    if (q["queue"] == "root.dev") {
      EXPECT_EQ(q["apps"], 2);
      EXPECT_NEAR(q["memory_seconds"].get<int64_t>(), m1 + m3, 1);
    } else {
      EXPECT_EQ(q["queue"], "root.default");
      EXPECT_NEAR(q["memory_seconds"].get<int64_t>(), m2, 1);
    }
  }
  // bob may not read alice's usage; the text table has its units.
  auto [bc, bo] = ctlAs("bob", {"--user", "alice", "usage"});
  EXPECT_NE(bc, 0) << bo;
  auto [tc, table] = ctlAs("ops", {"usage", "--by", "queue"});
  EXPECT_EQ(tc, 0) << table;
  EXPECT_NE(table.find("root.dev"), std::string::npos) << table;
  EXPECT_NE(table.find(" MiB-s"), std::string::npos) << table;
  EXPECT_NE(table.find(" vcore-s"), std::string::npos) << table;
  // A window after every finish leaves them all out.
  json later = ctlJson("ops", {"usage", "--since", "now+1h", "--json"});
  EXPECT_TRUE(later["users"].empty()) << later.dump();
}

// rm.app-history.max-apps: 2 keeps the two newest finished apps (the RM
// forgets the oldest, in memory and in its store); an unfinished app stays.
// rm.app-history.max-age: 1s forgets finished apps a second after they end.
TEST_F(LimitsAccountingIT, FinishedAppsAreForgottenBeyondMaxAppsAndMaxAge) {
  // No node: apps stay ACCEPTED until killed (KILLED is finished).
  ASSERT_NO_FATAL_FAILURE(startCluster(0, {"--set", "rm.app-history.max-apps=2"}));
  std::string file = job("h", 1, "true");
  std::string waiting = submit("alice", file);
  std::vector<std::string> killed;
  for (int i = 0; i < 3; i++) {
    std::string id = submit("alice", file);
    auto [kc, ko] = ctl({"app", "kill", id});
    ASSERT_EQ(kc, 0) << ko;
    killed.push_back(id);
  }
  auto [gc, gone] = ctl({"app", "status", killed[0]});
  EXPECT_NE(gc, 0) << gone;
  EXPECT_NE(gone.find("does not exist"), std::string::npos) << gone;
  json list = ctlJson("alice", {"app", "list", "--json"});
  EXPECT_EQ(list["applications"].size(), 3u) << list.dump();  // 2 killed + the waiting one
  EXPECT_EQ(state(waiting), "ACCEPTED");

  ASSERT_EQ(rm_.signalAndWait(SIGTERM, 20s), 0);
  ASSERT_NO_FATAL_FAILURE(startCluster(0, {"--set", "rm.app-history.max-age=1s"}));
  std::string short_lived = submit("alice", file);
  std::string stays = submit("alice", file);
  auto [kc, ko] = ctl({"app", "kill", short_lived});
  ASSERT_EQ(kc, 0) << ko;
  EXPECT_EQ(state(short_lived), "KILLED");
  EXPECT_TRUE(poll(
      [&] {
        return ctl({"app", "status", short_lived}).first != 0;
      },
      5s))
      << "a finished app older than max-age is forgotten";
  EXPECT_EQ(state(stays), "ACCEPTED");
}

}  // namespace
}  // namespace morpheus::testing
