// Day-2 node controls end to end (docs/operator/node-operations.md), with a
// real RM, NMs, the DAG AM and morpheusctl: a drained node gets no new
// containers and leaves the plan (a reservation that needed it is at risk)
// until undrained; a decommission waits for the node's running containers,
// then refuses the node; a decommission past its timeout ends them as lost;
// a drain survives an RM restart; only admins may use these controls.
#include <gtest/gtest.h>
#include <signal.h>

#include <nlohmann/json.hpp>

#include "harness.h"

namespace morpheus::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// A one-off of `containers` x (1024 MiB, 1 vcore) in one gang, an hour ahead.
json oneOff(int containers) {
  const int64_t arrival = (nowMs() / 60000 + 60) * 60000;
  return {{"arrival", arrival},
          {"deadline", arrival + 600000},
          {"reservation-name", "needs-both-nodes"},
          {"recurrence-expression", "0"},
          {"reservation-requests",
           {{"reservation-request-interpreter", 1},
            {"reservation-request", json::array({{{"capability", {{"memory", 1024}, {"vCores", 1}}},
                                                  {"num-containers", containers},
                                                  {"min-concurrency", containers},
                                                  {"duration", 600000}}})}}}};
}

class NodeOpsIT : public ClusterTest {
 protected:
  // node id -> node of `node list --json`.
  std::map<std::string, json> nodes() {
    auto [code, out] = ctl({"node", "list", "--json"});
    std::map<std::string, json> m;
    auto j = json::parse(out, nullptr, false);
    if (code != 0 || j.is_discarded()) return m;
    for (const auto& n : j["nodes"]) m[n["node_id"]] = n;
    return m;
  }
  std::string state(const std::string& node) {
    auto m = nodes();
    return m.count(node) ? m[node].value("state", "") : "<missing>";
  }
  json clusterStatus() {
    auto [code, out] = ctl({"cluster", "status", "--json"});
    return json::parse(out, nullptr, false);
  }
  std::string reservationStatus(const std::string& id) {
    auto [code, out] = ctl({"reservation", "list", "--json"});
    auto j = json::parse(out, nullptr, false);
    if (j.is_discarded()) return "<unreadable>";
    for (const auto& r : j["reservations"]) {
      if (r["reservation_id"] == id) return r.value("status", "");
    }
    return "<missing>";
  }
  std::string submit(const std::string& job) {
    auto [code, out] = ctl({"app", "submit", job});
    EXPECT_EQ(code, 0) << out;
    return out.substr(0, out.find('\n'));
  }
};

// More tasks than one node holds at once (4 vcores: the AM and 3 tasks), so
// the scheduler would use both nodes if it could.
const char* kShortJob =
    "name: short\n"
    "stages:\n"
    "  - name: work\n"
    "    tasks: 6\n"
    "    command: \"sleep 1; echo done\"\n"
    "    resources: {memory_mib: 256, vcores: 1}\n";

// Drain: the plan's capacity shrinks (a reservation needing both nodes is at
// risk), a new app runs only on the other node; undrain restores both. A
// non-admin is refused and changes nothing.
TEST_F(NodeOpsIT, DrainedNodeGetsNoNewContainersAndLeavesThePlanUntilUndrained) {
  startCluster(2, {"--set", "rm.node-expiry=1500ms", "--set", "rm.heartbeat-interval=200ms"});
  std::string whole = submitReservation(oneOff(8));  // both NMs' 2 x 4 vcores
  ASSERT_FALSE(whole.empty());
  EXPECT_EQ(reservationStatus(whole), "active");

  auto [rc, refused] = ctl({"node", "drain", "nm1"});  // alice is no admin
  EXPECT_EQ(rc, 1) << refused;
  EXPECT_NE(refused.find("PERMISSION_DENIED"), std::string::npos) << refused;
  EXPECT_NE(refused.find("alice may not drain node nm1"), std::string::npos) << refused;
  EXPECT_EQ(state("nm1"), "RUNNING");

  auto [code, out] = ctlAs("ops", {"node", "drain", "nm1", "--json"});
  ASSERT_EQ(code, 0) << out;
  json drained = json::parse(out, nullptr, false);
  ASSERT_FALSE(drained.is_discarded()) << out;
  EXPECT_EQ(drained["nodes"][0]["state"], "DRAINED") << out;
  EXPECT_EQ(drained["nodes"][0]["drained"], true) << out;
  ASSERT_TRUE(waitFor([&] { return reservationStatus(whole) == "at-risk"; }, 15s))
      << reservationStatus(whole) << "\n"
      << rm_.log();
  json s = clusterStatus();
  EXPECT_EQ(s["capacity"]["vcores"], 4) << s.dump();
  EXPECT_EQ(s["live_nodes"], 2) << "a drained node still heartbeats: " << s.dump();
  auto rest = httpRequest(rm_.httpAddress(), "GET", "/ws/v1/cluster/nodes/nm1", "",
                          "application/json", bearer("alice"));
  EXPECT_NE(rest.body.find("\"morpheusDrained\":true"), std::string::npos) << rest.body;
  EXPECT_NE(rest.body.find("\"state\":\"RUNNING\""), std::string::npos) << rest.body;
  auto metrics = httpRequest(rm_.httpAddress(), "GET", "/metrics");
  EXPECT_NE(metrics.body.find("morpheus_rm_nodes_admin{state=\"drained\"} 1\n"), std::string::npos)
      << metrics.body;

  std::string id = submit(writeJob(kShortJob));
  ASSERT_TRUE(waitFinal(id, 30s)) << rm_.log();
  json a = app(id);
  EXPECT_EQ(a["state"], "FINISHED") << a.dump();
  EXPECT_EQ(a["am_node_id"], "nm2") << a.dump();
  EXPECT_EQ(nms_[0].log().find("of " + id + " started"), std::string::npos)
      << "a container of " << id << " ran on the drained nm1:\n"
      << nms_[0].log();
  EXPECT_NE(nms_[1].log().find("of " + id + " started"), std::string::npos) << nms_[1].log();

  auto [uc, uo] = ctlAs("ops", {"node", "undrain", "nm1"});
  ASSERT_EQ(uc, 0) << uo;
  EXPECT_NE(uo.find("node nm1: RUNNING"), std::string::npos) << uo;
  ASSERT_TRUE(waitFor([&] { return reservationStatus(whole) == "active"; }, 15s))
      << reservationStatus(whole) << "\n"
      << rm_.log();
  EXPECT_EQ(clusterStatus()["capacity"]["vcores"], 8);
}

// Decommission of the node running an app's AM: DECOMMISSIONING while the
// app runs (it finishes normally), then DECOMMISSIONED; the NM is told to
// stop and its registration is refused with the reason; undrain lets it back.
TEST_F(NodeOpsIT, DecommissionWaitsForRunningContainersThenRefusesTheNode) {
  // A decommission ends no earlier than the start-up grace (one node expiry).
  startCluster(2, {"--set", "rm.heartbeat-interval=200ms", "--set", "rm.node-expiry=2s"});
  std::string id =
      submit(writeJob("name: outlives-the-decommission\n"
                      "stages:\n"
                      "  - name: work\n"
                      "    tasks: 1\n"
                      "    command: \"sleep 2; echo done\"\n"
                      "    resources: {memory_mib: 256, vcores: 1}\n"));
  std::string am_node;
  ASSERT_TRUE(waitFor(
      [&] {
        json a = app(id);
        if (a.is_discarded() || a["state"] != "RUNNING") return false;
        am_node = a["am_node_id"];
        return !am_node.empty();
      },
      20s))
      << rm_.log();
  const size_t victim = am_node == "nm1" ? 0 : 1;
  auto [code, out] = ctlAs("ops", {"node", "decommission", am_node, "--timeout", "1m"});
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("node " + am_node + ": DECOMMISSIONING"), std::string::npos) << out;
  EXPECT_EQ(state(am_node), "DECOMMISSIONING");
  ASSERT_TRUE(waitFinal(id, 30s)) << rm_.log();
  EXPECT_EQ(app(id)["state"], "FINISHED") << app(id).dump() << rm_.log();
  EXPECT_EQ(app(id)["am_attempt"], 1) << "the AM was not disturbed";
  ASSERT_TRUE(waitFor([&] { return state(am_node) == "DECOMMISSIONED"; }, 10s))
      << state(am_node) << "\n"
      << rm_.log();
  ASSERT_TRUE(waitFor(
      [&] {
        return nms_[victim].log().find("is decommissioned: its registration is refused") !=
               std::string::npos;
      },
      10s))
      << nms_[victim].log();
  json s = clusterStatus();
  EXPECT_EQ(s["live_nodes"], 1) << s.dump();
  EXPECT_EQ(s["capacity"]["vcores"], 4) << s.dump();
  auto rest = httpRequest(rm_.httpAddress(), "GET", "/ws/v1/cluster/metrics", "",
                          "application/json", bearer("alice"));
  EXPECT_NE(rest.body.find("\"decommissionedNodes\":1"), std::string::npos) << rest.body;

  auto [uc, uo] = ctlAs("ops", {"node", "undrain", am_node});
  ASSERT_EQ(uc, 0) << uo;
  ASSERT_TRUE(waitFor([&] { return state(am_node) == "RUNNING"; }, 15s)) << state(am_node) << "\n"
                                                                         << nms_[victim].log();
  EXPECT_EQ(clusterStatus()["live_nodes"], 2);
}

// A decommission whose timeout passes with a container still running ends it
// as on node loss (the app's AM attempt is lost and retried elsewhere).
TEST_F(NodeOpsIT, DecommissionTimeoutEndsRunningContainersAsLost) {
  startCluster(2, {"--set", "rm.heartbeat-interval=200ms"});
  std::string id =
      submit(writeJob("name: too-slow\n"
                      "stages:\n"
                      "  - name: work\n"
                      "    tasks: 1\n"
                      "    command: \"sleep 60\"\n"
                      "    resources: {memory_mib: 256, vcores: 1}\n"));
  std::string am_node;
  ASSERT_TRUE(waitFor(
      [&] {
        json a = app(id);
        if (a.is_discarded() || a["state"] != "RUNNING") return false;
        am_node = a["am_node_id"];
        return !am_node.empty();
      },
      20s))
      << rm_.log();
  auto [code, out] =
      ctlAs("ops", {"node", "decommission", am_node, "--timeout", "500ms", "--wait"});
  ASSERT_EQ(code, 0) << out << rm_.log();
  EXPECT_NE(out.find("node " + am_node + ": DECOMMISSIONED"), std::string::npos) << out;
  EXPECT_NE(rm_.log().find("still running at the decommission timeout"), std::string::npos)
      << rm_.log();
  ASSERT_TRUE(waitFor([&] { return app(id)["am_attempt"] == 2; }, 15s)) << app(id).dump();
  EXPECT_NE(app(id)["am_node_id"], am_node) << app(id).dump();
  ctl({"app", "kill", id});
}

// An acknowledged drain is in the state store: the restarted RM still has the
// node drained (out of the plan's capacity), on the same address.
TEST_F(NodeOpsIT, DrainSurvivesAnRmRestart) {
  std::string rm_dir = freshDir("rm-restart");
  const std::vector<int> ports = freeLoopbackPorts(2);
  ASSERT_EQ(ports.size(), 2u);
  const std::vector<std::string> rm_args = {"--set", "rm.heartbeat-interval=200ms",
                                            "--set", "rm.node-expiry=1500ms",
                                            "--set", "rm.token-file=" + testTokenFile()};
  rm_ = Process::startDaemonOnPorts("rm", rm_dir, ports[0], ports[1], rm_args);
  ASSERT_FALSE(rm_.grpcAddress().empty()) << rm_.log();
  rm_addr_ = rm_.grpcAddress();
  for (int i = 0; i < 2; i++) {
    std::string node = "nm" + std::to_string(i + 1);
    std::vector<std::string> args = {"--rm",        rm_addr_,
                                     "--node-id",   node,
                                     "--set",       "nm.heartbeat-interval=200ms",
                                     "--resources", "memory=4096,vcores=4"};
    for (auto& a : nmAuthArgs(node)) args.push_back(std::move(a));
    nms_.push_back(Process::startDaemon("nm", freshDir("nm"), args));
  }
  ASSERT_TRUE(waitLiveNodes(2)) << rm_.log();
  auto [code, out] = ctlAs("ops", {"node", "drain", "nm2"});
  ASSERT_EQ(code, 0) << out;
  ASSERT_EQ(rm_.signalAndWait(SIGTERM, 10s), 0) << rm_.log();
  rm_ = Process::startDaemonOnPorts("rm", rm_dir, ports[0], ports[1], rm_args, 30s,
                                    rm_dir + "-restart.log");
  ASSERT_EQ(rm_.grpcAddress(), rm_addr_) << rm_.log();
  ASSERT_TRUE(waitLiveNodes(2)) << rm_.log();
  EXPECT_EQ(state("nm2"), "DRAINED") << rm_.log();
  ASSERT_TRUE(waitFor([&] { return clusterStatus()["capacity"]["vcores"] == 4; }, 10s))
      << clusterStatus().dump();
  EXPECT_NE(rm_.log().find("node nm2 is drained (recovered)"), std::string::npos) << rm_.log();
}

}  // namespace
}  // namespace morpheus::testing
