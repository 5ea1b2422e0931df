// Runtime end to end: real RM, NMs and the DAG application master
// on loopback. A 3-stage DAG completes on 3 NMs; a task over its memory is
// killed with a diagnostic naming the limit; an NM killed mid-job loses its
// containers, they re-run elsewhere and the job completes.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "harness.h"
#include "test_paths.h"

namespace morpheus::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

class RuntimeIT : public ClusterTest {};

// Also: the finished app's telemetry is queryable in the RM and reaches a
// real morpheus-inference (the RM's feed of Morpheus §4 input).
TEST_F(RuntimeIT, ThreeStageDagCompletesOnThreeNodes) {
  // Inference authenticates ingestion: the RM feeds it as the admin ops.
  std::string inf_dir = freshDir("inference");
  std::string feed_token = inf_dir + "-rm-token";
  writeSecretFile(feed_token, testToken("ops") + "\n");
  Process inf = Process::startDaemon("inference", inf_dir, {"--token-file", testTokenFile()});
  ASSERT_FALSE(inf.grpcAddress().empty()) << inf.log();
  startCluster(3, {"--set", "rm.inference-address=" + inf.grpcAddress(), "--set", "planner.step=2s",
                   "--set", "rm.inference-token-file=" + feed_token});
  auto [code, out] = ctl({"app", "submit", std::string(sourceDir()) + "/examples/dag-3stage.yaml",
                          "--recurrence", "dag-nightly", "--wait"});
  ASSERT_EQ(code, 0) << out << rm_.log();
  EXPECT_NE(out.find("all 5 task(s) of job 'dag-3stage' succeeded"), std::string::npos) << out;
  std::string id = out.substr(0, out.find('\n'));
  json a = app(id);
  EXPECT_EQ(a["state"], "FINISHED") << a.dump();
  EXPECT_EQ(a["am_attempt"], 1) << a.dump();

  auto [ct, ot] = ctl({"app", "telemetry", "--key", "dag-nightly", "--json"});
  ASSERT_EQ(ct, 0) << ot;
  json tel = json::parse(ot)["applications"];
  ASSERT_EQ(tel.size(), 1u) << ot;
  EXPECT_EQ(tel[0]["application_id"], id);
  double peak = 0;
  for (double v : tel[0]["skyline"]) peak = std::max(peak, v);
  EXPECT_GT(peak, 1.5) << "3 transform tasks ran in parallel: " << ot;
  EXPECT_EQ(tel[0]["files"], 6) << ot;  // 3 stages x (read + write)
  // The inference service received the run: a refit lists the job.
  ASSERT_TRUE(waitFor(
      [&] {
        std::map<std::string, std::string> ops = {{"MORPHEUS_TOKEN", testToken("ops")}};
        runCommand({binary("morpheusctl"), "--inference", inf.grpcAddress(), "slo", "refit"}, ops);
        auto [c, o] = runCommand(
            {binary("morpheusctl"), "--inference", inf.grpcAddress(), "slo", "list", "--why"}, ops);
        return o.find("dag-nightly") != std::string::npos;
      },
      20s))
      << inf.log();
}

TEST_F(RuntimeIT, TaskOverItsMemoryIsKilledWithADiagnosticNamingTheLimit) {
  startCluster(1);
  auto [code, out] =
      ctl({"app", "submit", std::string(sourceDir()) + "/examples/dag-memory-hog.yaml", "--wait"});
  EXPECT_EQ(code, 1) << out;
  std::string id = out.substr(0, out.find('\n'));
  json a = app(id);
  EXPECT_EQ(a["state"], "FAILED") << a.dump();
  std::string diag = a["diagnostics"].get<std::string>();
  EXPECT_NE(diag.find("exceeded its limit of 64 MiB"), std::string::npos) << a.dump() << "\n"
                                                                          << out;
}

TEST_F(RuntimeIT, NodeKilledMidJobLosesItsContainersWhichRunElsewhere) {
  startCluster(3, {"--set", "rm.node-expiry=2s", "--set", "rm.heartbeat-interval=300ms"});
  std::string job = writeJob(
      "name: survives-node-loss\n"
      "stages:\n"
      "  - name: work\n"
      "    tasks: 6\n"
      "    command: \"sleep 6; echo done\"\n"
      "    resources: {memory_mib: 256, vcores: 1}\n"
      "    max_attempts: 3\n");
  auto [code, out] = ctl({"app", "submit", job});
  ASSERT_EQ(code, 0) << out;
  std::string id = out.substr(0, out.find('\n'));
  // Wait until tasks run, then kill an NM that runs tasks but not the AM.
  std::string am_node;
  int victim = -1;
  ASSERT_TRUE(waitFor(
      [&] {
        json a = app(id);
        if (a.is_discarded() || a["state"] != "RUNNING" ||
            a["running_containers"].get<double>() < 4)
          return false;
        am_node = a["am_node_id"];
        auto [c, o] = ctl({"cluster", "status", "--json"});
        json s = json::parse(o, nullptr, false);
        for (const auto& n : s["nodes"]) {
          std::string nid = n["node_id"];
          if (nid != am_node && n["containers"].get<double>() > 0) {
            victim = std::stoi(nid.substr(2)) - 1;
            return true;
          }
        }
        return false;
      },
      20s))
      << rm_.log();
  ASSERT_GE(victim, 0);
  ASSERT_EQ(nms_[static_cast<size_t>(victim)].signalAndWait(SIGKILL, 5s), 128 + SIGKILL);
  ASSERT_TRUE(waitFinal(id, 60s)) << rm_.log();
  json a = app(id);
  EXPECT_EQ(a["state"], "FINISHED") << a.dump() << rm_.log();
  EXPECT_NE(rm_.log().find("lost"), std::string::npos);
}

// Work-preserving restart: the RM is SIGKILLed mid-job and restarted on the
// same address; NMs resync, running containers survive (the AM is not
// restarted), the job completes and nothing acknowledged is lost.
TEST_F(RuntimeIT, RmKilledMidJobRestartsAndTheJobCompletes) {
  std::string rm_dir = freshDir("rm-restart");
  std::string tokens = testTokenFile();
  // The restarted RM needs the same address: ports below the ephemeral range
  // (no outgoing connection takes them meanwhile), and both starts retry
  // while another process holds one (harness.h).
  const std::vector<int> ports = freeLoopbackPorts(2);
  ASSERT_EQ(ports.size(), 2u);
  const std::vector<std::string> rm_args = {"--set", "rm.heartbeat-interval=300ms", "--set",
                                            "rm.token-file=" + tokens};
  rm_ = Process::startDaemonOnPorts("rm", rm_dir, ports[0], ports[1], rm_args);
  ASSERT_FALSE(rm_.grpcAddress().empty()) << rm_.log();
  rm_addr_ = rm_.grpcAddress();
  for (int i = 0; i < 2; i++) {
    std::string node = "nm" + std::to_string(i + 1);
    std::vector<std::string> args = {
        "--rm",        rm_.grpcAddress(),      "--node-id", node,
        "--resources", "memory=4096,vcores=4", "--set",     "nm.monitor-interval=200ms"};
    for (auto& a : nmAuthArgs(node)) args.push_back(std::move(a));
    nms_.push_back(Process::startDaemon("nm", freshDir("nm"), args));
  }
  std::string job = writeJob(
      "name: survives-rm-restart\n"
      "stages:\n"
      "  - name: work\n"
      "    tasks: 3\n"
      "    command: \"sleep 8; echo done\"\n"
      "    resources: {memory_mib: 256, vcores: 1}\n"
      "    max_attempts: 1\n");
  ASSERT_TRUE(waitFor([&] { return ctl({"cluster", "status"}).first == 0; }, 10s));
  ASSERT_TRUE(waitFor(
      [&] {
        auto [c, o] = ctl({"cluster", "status", "--json"});
        auto j = json::parse(o, nullptr, false);
        return !j.is_discarded() && j["live_nodes"] == 2;
      },
      15s));
  auto [code, out] = ctl({"app", "submit", job});
  ASSERT_EQ(code, 0) << out;
  std::string id = out.substr(0, out.find('\n'));
  ASSERT_TRUE(waitFor(
      [&] {
        json a = app(id);
        return !a.is_discarded() && a["state"] == "RUNNING" &&
               a["running_containers"].get<double>() >= 3;
      },
      20s))
      << rm_.log();
  ASSERT_EQ(rm_.signalAndWait(SIGKILL, 5s), 128 + SIGKILL);
  rm_ = Process::startDaemonOnPorts("rm", rm_dir, ports[0], ports[1], rm_args,
                                    std::chrono::seconds(30), rm_dir + "-restart.log");
  ASSERT_EQ(rm_.grpcAddress(), rm_addr_) << rm_.log();
  ASSERT_TRUE(waitFinal(id, 60s)) << rm_.log();
  json a = app(id);
  EXPECT_EQ(a["state"], "FINISHED") << a.dump() << rm_.log();
  EXPECT_EQ(a["am_attempt"], 1) << "the AM survived the restart: " << a.dump();
  EXPECT_NE(rm_.log().find("re-adopted running container"), std::string::npos) << rm_.log();
}

// A reservation queue gets its guaranteed containers once its allocation
// starts while an ad-hoc job fills the cluster: borrowed containers get a
// preemption notice and are killed after the grace period.
TEST_F(RuntimeIT, ReservationReclaimsItsGuaranteeFromAdHocWork) {
  startCluster(1, {"--set", "planner.step=5s", "--set", "rm.preemption-grace=1s", "--set",
                   "rm.heartbeat-interval=300ms"});
  // Ad hoc: AM + 3 long tasks fill the node's 4 vcores.
  std::string adhoc = writeJob(
      "name: filler\n"
      "stages:\n"
      "  - name: fill\n"
      "    tasks: 6\n"
      "    command: \"sleep 120\"\n"
      "    resources: {memory_mib: 512, vcores: 1}\n"
      "    max_attempts: 5\n");
  auto [c1, o1] = ctl({"app", "submit", adhoc});
  ASSERT_EQ(c1, 0) << o1;
  std::string adhoc_id = o1.substr(0, o1.find('\n'));
  ASSERT_TRUE(waitRunning(adhoc_id, 4, 20s)) << rm_.log();

  // A one-off reservation of 3 containers (1 GiB, 1 vcore) for 40 s, starting soon.
  int64_t t0 = nowMs() + 8000;
  auto n = httpRequest(rm_.httpAddress(), "POST", "/ws/v1/cluster/reservation/new-reservation", "",
                       "application/json", bearer("alice"));
  ASSERT_EQ(n.status, 200) << n.body;
  std::string rid = json::parse(n.body)["reservation-id"];
  json def = {
      {"arrival", t0},
      {"deadline", t0 + 60000},
      {"reservation-name", "reserved"},
      {"recurrence-expression", "0"},
      {"reservation-requests",
       {{"reservation-request-interpreter", 1},
        {"reservation-request", json::array({{{"capability", {{"memory", 1024}, {"vCores", 1}}},
                                              {"num-containers", 3},
                                              {"min-concurrency", 1},
                                              {"duration", 40000}}})}}}};
  auto sub = httpRequest(rm_.httpAddress(), "POST", "/ws/v1/cluster/reservation/submit",
                         json({{"reservation-id", rid},
                               {"queue", "default"},
                               {"user", "alice"},
                               {"reservation-definition", def}})
                             .dump(),
                         "application/json", bearer("alice"));
  ASSERT_EQ(sub.status, 200) << sub.body;
  int64_t alloc_start = INT64_MAX;
  json placed = json::parse(sub.body);
  for (const auto& a : placed["resource-allocations"]) {
    alloc_start = std::min(alloc_start, a["startTime"].get<int64_t>());
  }
  ASSERT_NE(alloc_start, INT64_MAX) << sub.body << app(adhoc_id).dump();

  std::string reserved = writeJob(
      "name: reserved\n"
      "stages:\n"
      "  - name: work\n"
      "    tasks: 2\n"
      "    command: \"sleep 3\"\n"
      "    resources: {memory_mib: 512, vcores: 1}\n");
  auto [c2, o2] = ctl({"app", "submit", reserved, "--reservation", rid});
  ASSERT_EQ(c2, 0) << o2;
  std::string res_id = o2.substr(0, o2.find('\n'));
  ASSERT_TRUE(waitFor(
      [&] {
        json a = app(res_id);
        return !a.is_discarded() && a["state"] == "FINISHED";
      },
      90s))
      << rm_.log();
  json a = app(res_id);
  // Before its allocation starts the reservation guarantees nothing and the
  // node is full: its AM started no earlier than the allocation (whatever
  // the machine's speed, unlike a look at its state before then).
  EXPECT_GE(a["start_ms"].get<int64_t>(), alloc_start) << a.dump();
  // It ran on containers taken back from the filler (whose tasks sleep
  // 120 s), not on ones the filler gave up.
  auto m = httpRequest(rm_.httpAddress(), "GET", "/metrics");
  const auto at = m.body.find("\nmorpheus_rm_containers_preempted_total");
  ASSERT_NE(at, std::string::npos) << m.body;
  const auto value = m.body.find(' ', m.body.find_first_of("} ", at + 1));
  EXPECT_GT(std::stod(m.body.substr(value + 1)), 0) << m.body.substr(at, 200);
  EXPECT_NE(rm_.log().find("preempting"), std::string::npos);
  EXPECT_EQ(app(adhoc_id)["state"], "RUNNING") << "the ad-hoc job lost tasks, not its AM";
}

// An NM killed with SIGKILL and restarted on the same data dir re-attaches
// to its running containers (the AM among them): the job finishes with its
// first AM attempt.
TEST_F(RuntimeIT, RestartedNmReattachesToRunningContainers) {
  startCluster(1);
  std::string nm_dir = freshDir("nm-reattach");
  std::string nm_token = nodeTokenFile("nm2");
  // The restarted NM keeps its address: a port below the ephemeral range,
  // both starts retrying while it is taken (harness.h).
  const int port = freeLoopbackPort();
  ASSERT_GT(port, 0);
  const std::vector<std::string> nm_args = {"--rm",        rm_.grpcAddress(),
                                            "--node-id",   "nm2",
                                            "--resources", "memory=4096,vcores=4",
                                            "--set",       "nm.monitor-interval=200ms",
                                            "--set",       "nm.heartbeat-interval=300ms",
                                            "--set",       "nm.token-file=" + nm_token};
  nms_[0] = Process::startDaemonOnPorts("nm", nm_dir, port, 0, nm_args);
  ASSERT_FALSE(nms_[0].grpcAddress().empty()) << nms_[0].log();
  std::string job = writeJob(
      "name: survives-nm-restart\n"
      "stages:\n"
      "  - name: work\n"
      "    tasks: 2\n"
      "    command: \"sleep 6; echo done\"\n"
      "    resources: {memory_mib: 256, vcores: 1}\n"
      "    max_attempts: 1\n");
  auto [code, out] = ctl({"app", "submit", job});
  ASSERT_EQ(code, 0) << out;
  std::string id = out.substr(0, out.find('\n'));
  ASSERT_TRUE(waitFor(
      [&] {
        json a = app(id);
        if (a.is_discarded() || a["am_node_id"] != "nm2") return false;
        // The NM itself reports 3 running processes (AM + 2 tasks).
        auto [c, o] = ctl({"cluster", "status", "--json"});
        json st = json::parse(o, nullptr, false);
        if (st.is_discarded()) return false;
        for (const auto& n : st["nodes"]) {
          if (n["node_id"] == "nm2" && n["containers"].get<double>() >= 3) return true;
        }
        return false;
      },
      20s))
      << rm_.log();
  ASSERT_EQ(nms_[0].signalAndWait(SIGKILL, 5s), 128 + SIGKILL);
  nms_[0] =
      Process::startDaemonOnPorts("nm", nm_dir, port, 0, nm_args, 30s, nm_dir + "-restart.log");
  ASSERT_FALSE(nms_[0].grpcAddress().empty()) << nms_[0].log();
  ASSERT_TRUE(waitFinal(id, 40s)) << rm_.log() << nms_[0].log();
  json a = app(id);
  EXPECT_EQ(a["state"], "FINISHED") << a.dump();
  EXPECT_EQ(a["am_attempt"], 1) << a.dump();
  EXPECT_NE(nms_[0].log().find("re-attached to 3 running container(s)"), std::string::npos)
      << nms_[0].log();
}

}  // namespace
}  // namespace morpheus::testing
