// YARN's read-only REST on the RM's HTTP port, ListQueues / `queue list` and
// morpheusctl's usage conventions, against a real RM with two NMs
// and a real DAG application.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "harness.h"

namespace morpheus::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

class ClusterRestIT : public ClusterTest {
 protected:
  // GET `path` on the RM's HTTP port as alice; {status, parsed body}.
  std::pair<int, json> get(const std::string& path, const std::string& principal = "alice") {
    auto r =
        httpRequest(rm_.httpAddress(), "GET", path, "", "application/json",
                    principal.empty() ? std::map<std::string, std::string>{} : bearer(principal));
    return {r.status, json::parse(r.body, nullptr, false)};
  }
};

const json* findBy(const json& list, const std::string& key, const std::string& value) {
  for (const auto& e : list) {
    if (e.contains(key) && e[key] == value) return &e;
  }
  return nullptr;
}

// The YARN endpoints report the live nodes, their capacity and a running app
// with its state and queue; filters select, bad filters are 400 naming the
// parameter, unknown ids 404; everything needs a token.
TEST_F(ClusterRestIT, YarnEndpointsReportNodesAppsAndQueues) {
  startCluster(2);
  std::string job = writeJob(
      "name: rest-probe\n"
      "stages:\n"
      "  - name: work\n"
      "    tasks: 1\n"
      "    command: \"sleep 30\"\n"
      "    resources: {memory_mib: 256, vcores: 1}\n");
  auto [code, out] = ctl({"app", "submit", job});
  ASSERT_EQ(code, 0) << out;
  std::string id = out.substr(0, out.find('\n'));
  ASSERT_TRUE(waitRunning(id, 2, 20s)) << rm_.log();  // AM + the task

  auto [s401, e401] = get("/ws/v1/cluster/info", "");
  EXPECT_EQ(s401, 401);
  auto [si, info] = get("/ws/v1/cluster/info");
  ASSERT_EQ(si, 200) << info.dump();
  EXPECT_EQ(info["clusterInfo"]["state"], "STARTED");
  EXPECT_GT(info["clusterInfo"]["startedOn"].get<int64_t>(), 0);

  auto [sm, metrics] = get("/ws/v1/cluster/metrics");
  ASSERT_EQ(sm, 200);
  const json& m = metrics["clusterMetrics"];
  EXPECT_EQ(m["activeNodes"], 2) << m.dump();
  EXPECT_EQ(m["totalMB"], 2 * 4096) << m.dump();
  EXPECT_EQ(m["totalVirtualCores"], 8) << m.dump();
  EXPECT_EQ(m["appsRunning"], 1) << m.dump();
  EXPECT_EQ(m["totalMB"].get<int64_t>(),
            m["allocatedMB"].get<int64_t>() + m["availableMB"].get<int64_t>());

  auto [sn, nodes] = get("/ws/v1/cluster/nodes");
  ASSERT_EQ(sn, 200);
  ASSERT_EQ(nodes["nodes"]["node"].size(), 2u) << nodes.dump();
  const json* nm1 = findBy(nodes["nodes"]["node"], "id", "nm1");
  ASSERT_NE(nm1, nullptr) << nodes.dump();
  EXPECT_EQ((*nm1)["state"], "RUNNING");
  EXPECT_EQ((*nm1)["usedMemoryMB"].get<int64_t>() + (*nm1)["availMemoryMB"].get<int64_t>(), 4096);
  auto [sn1, one] = get("/ws/v1/cluster/nodes/nm1");
  EXPECT_EQ(sn1, 200);
  EXPECT_EQ(one["node"]["id"], "nm1");
  auto [s404, e404] = get("/ws/v1/cluster/nodes/nm9");
  EXPECT_EQ(s404, 404);
  EXPECT_EQ(e404["RemoteException"]["exception"], "NotFoundException") << e404.dump();
  auto [sbn, ebn] = get("/ws/v1/cluster/nodes?states=SLEEPING");
  EXPECT_EQ(sbn, 400);

  auto [sa, apps] = get("/ws/v1/cluster/apps");
  ASSERT_EQ(sa, 200);
  const json* a = findBy(apps["apps"]["app"], "id", id);
  ASSERT_NE(a, nullptr) << apps.dump();
  EXPECT_EQ((*a)["state"], "RUNNING");
  EXPECT_EQ((*a)["finalStatus"], "UNDEFINED");
  EXPECT_EQ((*a)["queue"], "root.default");
  EXPECT_EQ((*a)["user"], "alice");
  EXPECT_GE((*a)["runningContainers"], 2);
  auto count = [&](const std::string& q) {
    auto [s, j] = get("/ws/v1/cluster/apps?" + q);
    EXPECT_EQ(s, 200) << q << " " << j.dump();
    return j["apps"]["app"].size();
  };
  EXPECT_EQ(count("states=running,accepted"), 1u);
  EXPECT_EQ(count("states=FINISHED"), 0u);
  EXPECT_EQ(count("queue=default"), 1u);
  EXPECT_EQ(count("queue=root.other"), 0u);
  EXPECT_EQ(count("user=alice"), 1u);
  EXPECT_EQ(count("user=bob"), 0u);
  auto [sbs, ebs] = get("/ws/v1/cluster/apps?states=DONE");
  EXPECT_EQ(sbs, 400);
  EXPECT_NE(ebs["RemoteException"]["message"].get<std::string>().find("states"), std::string::npos)
      << ebs.dump();
  auto [sa1, a1] = get("/ws/v1/cluster/apps/" + id);
  EXPECT_EQ(sa1, 200);
  EXPECT_EQ(a1["app"]["id"], id);
  auto [sa404, ea404] = get("/ws/v1/cluster/apps/application_0_0042");
  EXPECT_EQ(sa404, 404);

  // A reservation appears as a queue (no app bound yet) next to the ad-hoc ones.
  std::string file = freshDir("res") + "/r.json";
  int64_t t0 = nowMs() + 3600000;
  std::ofstream(file) << json{{"queue", "default"},
                              {"reservation-definition",
                               {{"arrival", t0},
                                {"deadline", t0 + 600000},
                                {"reservation-requests",
                                 {{"reservation-request-interpreter", 1},
                                  {"reservation-request",
                                   json::array({{{"capability", {{"memory", 256}, {"vCores", 1}}},
                                                 {"num-containers", 1},
                                                 {"duration", 60000}}})}}}}}}
                             .dump();
  auto [cr, orr] = ctl({"reservation", "submit", "-f", file, "--json"});
  ASSERT_EQ(cr, 0) << orr;
  std::string rid = json::parse(orr)["reservations"][0]["reservation_id"];

  auto [sq, sched] = get("/ws/v1/cluster/scheduler");
  ASSERT_EQ(sq, 200);
  const json& root = sched["scheduler"]["schedulerInfo"]["rootQueue"];
  EXPECT_EQ(sched["scheduler"]["schedulerInfo"]["type"], "fairScheduler");
  EXPECT_EQ(root["queueName"], "root");
  const json* def = findBy(root["childQueues"]["queue"], "queueName", "root.default");
  ASSERT_NE(def, nullptr) << root.dump();
  EXPECT_EQ((*def)["numActiveApps"], 1);
  EXPECT_GE((*def)["usedResources"]["memory"].get<int64_t>(), 256);
  EXPECT_NE(findBy(root["childQueues"]["queue"], "queueName", rid), nullptr) << root.dump();

  auto [cq, oq] = ctl({"queue", "list", "--json"});
  ASSERT_EQ(cq, 0) << oq;
  json queues = json::parse(oq)["queues"];
  const json* q = findBy(queues, "name", "root.default");
  ASSERT_NE(q, nullptr) << oq;
  EXPECT_EQ((*q)["running_apps"], 1);
  EXPECT_EQ((*q)["pending_apps"], 0);
  EXPECT_EQ((*q)["kind"], "adhoc");
  const json* r = findBy(queues, "name", rid);
  ASSERT_NE(r, nullptr) << oq;
  EXPECT_EQ((*r)["kind"], "reservation-oneoff");
  EXPECT_EQ((*r)["running_apps"], 0);

  ASSERT_EQ(ctl({"app", "kill", id}).first, 0);
  EXPECT_TRUE(waitFinal(id, 20s));
}

// `app logs --follow` prints the AM's log as it grows and returns once the app
// is final; what it printed is the whole log (no line lost or repeated).
TEST_F(ClusterRestIT, AppLogsFollowPrintsTheWholeLogUntilTheAppEnds) {
  startCluster(1);
  std::string job = writeJob(
      "name: follow-probe\n"
      "stages:\n"
      "  - name: a\n"
      "    tasks: 1\n"
      "    command: \"sleep 2\"\n"
      "    resources: {memory_mib: 128, vcores: 1}\n"
      "  - name: b\n"
      "    tasks: 1\n"
      "    command: \"sleep 2\"\n"
      "    resources: {memory_mib: 128, vcores: 1}\n"
      "    depends_on: [a]\n");
  auto [code, out] = ctl({"app", "submit", job});
  ASSERT_EQ(code, 0) << out;
  std::string id = out.substr(0, out.find('\n'));
  ASSERT_TRUE(waitRunning(id, 1, 20s)) << rm_.log();
  auto [cf, followed] = ctl({"app", "logs", id, "--follow", "--stderr"});
  ASSERT_EQ(cf, 0) << followed;
  EXPECT_EQ(app(id)["state"], "FINISHED");  // --follow returned only once the app ended
  // --follow follows the AM container: its whole stderr, read once it ended.
  const std::string am = app(id)["am_container_id"];
  auto [cl, whole] = ctl({"app", "logs", id, "--container", am, "--stderr"});
  ASSERT_EQ(cl, 0) << whole;
  EXPECT_FALSE(whole.empty());
  EXPECT_EQ(followed, whole);
}

// morpheusctl: bad usage exits 2 (README), a failed call 1, --version names the
// git revision, and the bash completion lists every command (queue list too).
TEST(CliUsageIT, ExitCodesVersionAndCompletion) {
  EXPECT_EQ(runCommand({binary("morpheusctl"), "--no-such-flag"}).first, 2);
  EXPECT_EQ(runCommand({binary("morpheusctl")}).first, 2);
  EXPECT_EQ(runCommand({binary("morpheusctl"), "app", "logs"}).first, 2);  // id missing
  EXPECT_EQ(runCommand({binary("morpheusctl"), "plan", "show", "--from", "+5h3x"}).first, 2);
  // Nothing listens there: the call fails.
  EXPECT_EQ(runCommand({binary("morpheusctl"), "--rm", "127.0.0.1:1", "--token",
                        "0123456789abcdef0123", "cluster", "status"})
                .first,
            1);
  auto [cv, ov] = runCommand({binary("morpheusctl"), "--version"});
  EXPECT_EQ(cv, 0);
  EXPECT_EQ(ov.rfind("morpheusctl ", 0), 0u) << ov;
  EXPECT_NE(ov.find("(git "), std::string::npos) << ov;
  for (const char* b :
       {"morpheus-rm", "morpheus-nm", "morpheus-inference", "morpheus-sim", "morpheus-dag-am"}) {
    auto [c, o] = runCommand({binary(b), "--version"});
    EXPECT_EQ(c, 0) << b << ": " << o;
    EXPECT_EQ(o.rfind(std::string(b) + " ", 0), 0u) << o;
  }
  auto [cc, oc] = runCommand({binary("morpheusctl"), "completion", "bash"});
  ASSERT_EQ(cc, 0) << oc;
  EXPECT_NE(oc.find("[\"morpheusctl queue\"]=\"list"), std::string::npos) << oc;
  EXPECT_NE(oc.find("[\"morpheusctl app logs\"]="), std::string::npos) << oc;
  EXPECT_NE(oc.find("complete -o default -F _morpheusctl morpheusctl"), std::string::npos);
  // The script works in bash: "morpheusctl app l<TAB>" offers list and logs.
  auto [cb, ob] =
      runCommand({"/bin/bash", "-c",
                  "source <(\"$0\" completion bash); COMP_WORDS=(morpheusctl app l); COMP_CWORD=2; "
                  "_morpheusctl; echo \"${COMPREPLY[*]}\"",
                  binary("morpheusctl")});
  EXPECT_EQ(cb, 0) << ob;
  EXPECT_NE(ob.find("list logs"), std::string::npos) << ob;
}

}  // namespace
}  // namespace morpheus::testing
