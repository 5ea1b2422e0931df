// The RM's YARN cluster REST (rm/http/cluster_rest.h) and reservation REST
// (rm/http/rest.h) over real HTTP in the test process: authentication on
// every route, each endpoint's JSON for a small known state (exact values),
// filters and their errors, unknown paths and methods, what a user may do
// to another user's reservation, and that no answer carries a secret.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "common/version.h"
#include "rm_http_fixture.h"

namespace morpheus::rm::httptest {
namespace {

constexpr int64_t kT1 = RmHttpTest::kT0 + 11'000;  // buildKnownState's "now"

// Every GET of the YARN cluster REST (cluster_rest.h) with a valid argument.
std::vector<std::string> clusterGets(const std::string& app) {
  return {"/ws/v1/cluster",
          "/ws/v1/cluster/info",
          "/ws/v1/cluster/metrics",
          "/ws/v1/cluster/nodes",
          "/ws/v1/cluster/nodes/nm1",
          "/ws/v1/cluster/apps",
          "/ws/v1/cluster/apps/" + app,
          "/ws/v1/cluster/scheduler",
          "/ws/v1/cluster/harvest-classes"};
}

// The YARN error shape with `exception` and `java` as its class names.
void expectRemoteException(const Reply& r, int status, const std::string& exception,
                           const std::string& java_class) {
  EXPECT_EQ(r.status, status) << r.show();
  EXPECT_EQ(r.headers.count("content-type") ? r.headers.at("content-type") : "", "application/json")
      << r.show();
  json j = r.parsed();
  ASSERT_TRUE(j.is_object()) << r.show();
  ASSERT_TRUE(j.contains("RemoteException")) << r.show();
  EXPECT_EQ(j["RemoteException"]["exception"], exception) << r.show();
  EXPECT_EQ(j["RemoteException"]["javaClassName"], java_class) << r.show();
  EXPECT_TRUE(j["RemoteException"]["message"].is_string()) << r.show();
}

std::string messageOf(const Reply& r) {
  json j = r.parsed();
  if (!j.is_object() || !j.contains("RemoteException")) return "";
  return j["RemoteException"].value("message", "");
}

class ClusterRestTest : public RmHttpTest {};

// No token, a wrong or malformed one, an expired one: 401 with YARN's
// AuthenticationException and the Bearer challenge RFC 9110 requires on a
// 401; a node credential: 403 ForbiddenException (no challenge: the caller
// did authenticate). On every route of both REST surfaces, and a refused
// write changes nothing.
TEST_F(ClusterRestTest, EveryRouteRefusesMissingWrongExpiredAndNodeCredentials) {
  ASSERT_NO_FATAL_FAILURE(buildKnownState());
  struct Route {
    std::string method, target, body;
  };
  std::vector<Route> routes;
  for (const auto& t : clusterGets(etl_.value())) routes.push_back({"GET", t, ""});
  const std::string base = "/ws/v1/cluster/reservation";
  const std::string del = json{{"reservation-id", rid_}}.dump();
  const std::string upd = yarnReservation(rid_, "nightly", kT0, kT0 + 1'200'000, 2, 600'000).dump();
  routes.push_back({"GET", base + "/list", ""});
  routes.push_back({"POST", base + "/new-reservation", ""});
  routes.push_back({"POST", base + "/submit", upd});
  routes.push_back({"POST", base + "/update", upd});
  routes.push_back({"POST", base + "/delete", del});

  const std::string auth_exc = "AuthenticationException";
  const std::string auth_java = "org.apache.hadoop.security.AuthenticationException";
  for (const auto& r : routes) {
    SCOPED_TRACE(r.method + " " + r.target);
    Reply none = httpCall(port_, r.method, r.target, "", r.body);
    expectRemoteException(none, 401, auth_exc, auth_java);
    EXPECT_NE(messageOf(none).find("missing credentials"), std::string::npos) << none.show();
    Reply wrong = httpCall(port_, r.method, r.target, "tok-nobody-000000000000", r.body);
    expectRemoteException(wrong, 401, auth_exc, auth_java);
    EXPECT_NE(messageOf(wrong).find("unknown token"), std::string::npos) << wrong.show();
    Reply basic = httpCall(port_, r.method, r.target, "", r.body,
                           {{"Authorization", "Basic YWxpY2U6YWxpY2U="}});
    expectRemoteException(basic, 401, auth_exc, auth_java);
    Reply expired = httpCall(port_, r.method, r.target, kExpired, r.body);
    expectRemoteException(expired, 401, auth_exc, auth_java);
    EXPECT_NE(messageOf(expired).find("expired"), std::string::npos) << expired.show();
    for (const Reply* unauthenticated : {&none, &wrong, &basic, &expired}) {
      EXPECT_EQ(unauthenticated->headers.count("www-authenticate")
                    ? unauthenticated->headers.at("www-authenticate")
                    : "",
                kBearerChallenge)
          << unauthenticated->show();
    }
    Reply node = httpCall(port_, r.method, r.target, kNode, r.body);
    expectRemoteException(node, 403, "ForbiddenException",
                          "org.apache.hadoop.yarn.webapp.ForbiddenException");
    EXPECT_EQ(node.headers.count("www-authenticate"), 0u) << node.show();
    EXPECT_NE(messageOf(node).find("node credential of nm1 is not a user"), std::string::npos)
        << node.show();
  }
  // The refused update and delete left alice's reservation as it was.
  auto rec = rm_->reservations().get(ReservationId(rid_));
  ASSERT_TRUE(rec.has_value());
  EXPECT_EQ(toEpochMs(rec->def.deadline), kT0 + 600'000);
  // The same request with alice's token passes the gate.
  EXPECT_EQ(get("/ws/v1/cluster/info", kAlice).status, 200);
}

// /ws/v1/cluster and /ws/v1/cluster/info: the RM's start and version.
TEST_F(ClusterRestTest, ClusterInfoNamesTheRmStartVersionAndEpoch) {
  const json expected = {
      {"clusterInfo",
       {{"id", kT0},
        {"startedOn", kT0},
        {"state", "STARTED"},
        {"haState", "ACTIVE"},
        {"rmStateStoreName", "morpheus"},
        {"resourceManagerVersion", projectVersion()},
        {"resourceManagerBuildVersion", std::string(projectVersion()) + " from " + gitRevision()},
        {"resourceManagerVersionBuiltOn", ""},
        {"hadoopVersion", projectVersion()},
        {"hadoopBuildVersion", std::string(projectVersion()) + " from " + gitRevision()},
        {"hadoopVersionBuiltOn", ""},
        {"morpheusEpoch", rm_->core().epoch()}}}};
  for (const char* target : {"/ws/v1/cluster", "/ws/v1/cluster/info"}) {
    Reply r = get(target, kAlice);
    ASSERT_EQ(r.status, 200) << target << ": " << r.show();
    EXPECT_EQ(r.headers["content-type"], "application/json") << target;
    EXPECT_EQ(r.parsed(), expected) << target << ": " << r.body;
  }
}

// clusterMetrics counts the known state: apps by state, live/lost nodes,
// capacity of the live node, what its NM reports in use, the reservation's
// guarantee now, the AM's outstanding asks.
TEST_F(ClusterRestTest, MetricsCountTheKnownState) {
  ASSERT_NO_FATAL_FAILURE(buildKnownState());
  Reply r = get("/ws/v1/cluster/metrics", kBob);
  ASSERT_EQ(r.status, 200) << r.show();
  const json expected = {{"clusterMetrics",
                          {{"appsSubmitted", 4},
                           {"appsCompleted", 0},
                           {"appsPending", 2},  // probe, in-res
                           {"appsRunning", 1},  // etl
                           {"appsFailed", 0},
                           {"appsKilled", 1},  // doomed
                           {"reservedMB", 2048},
                           {"availableMB", 8192 - 3072},
                           {"allocatedMB", 3072},
                           {"totalMB", 8192},  // nm2 is lost
                           {"reservedVirtualCores", 2},
                           {"availableVirtualCores", 5},
                           {"allocatedVirtualCores", 3},
                           {"totalVirtualCores", 8},
                           {"containersAllocated", 3},
                           {"containersReserved", 0},
                           {"containersPending", 50},
                           {"totalNodes", 2},
                           {"activeNodes", 1},
                           {"lostNodes", 1},
                           {"unhealthyNodes", 0},
                           {"decommissioningNodes", 0},
                           {"decommissionedNodes", 0},
                           {"rebootedNodes", 0},
                           {"shutdownNodes", 0},
                           {"morpheusActiveReservations", 1}}}};
  EXPECT_EQ(r.parsed(), expected) << r.body;
}

// The node JSON of nm1 (live, 3 containers) and nm2 (lost): YARN lists only
// live nodes without a filter; `states` selects (case-insensitive, YARN's
// names); an unknown state is 400 naming `states`; an unknown id 404.
TEST_F(ClusterRestTest, NodesReportTheirUseAndFilterByState) {
  ASSERT_NO_FATAL_FAILURE(buildKnownState());
  const json nm1 = {{"rack", "/default-rack"},
                    {"state", "RUNNING"},
                    {"id", "nm1"},
                    {"nodeHostName", "127.0.0.1"},
                    {"nodeHTTPAddress", "127.0.0.1:8042"},
                    {"lastHealthUpdate", kT1},
                    {"version", projectVersion()},
                    {"healthReport", ""},
                    {"numContainers", 3},
                    {"usedMemoryMB", 3072},
                    {"availMemoryMB", 5120},
                    {"usedVirtualCores", 3},
                    {"availableVirtualCores", 5},
                    {"resourceUtilization",
                     {{"nodePhysicalMemoryMB", 2000},
                      {"nodeCPUUsage", 1.5},
                      {"containersPhysicalMemoryMB", 2000},
                      {"containersCPUUsage", 1.5}}},
                    {"morpheusAttributes", {{"zone", "a"}}},
                    {"morpheusDrained", false}};
  const json nm2 = {{"rack", "/default-rack"},
                    {"state", "LOST"},
                    {"id", "nm2"},
                    {"nodeHostName", "127.0.0.2"},
                    {"nodeHTTPAddress", "127.0.0.2:8042"},
                    {"lastHealthUpdate", kT0},
                    {"version", projectVersion()},
                    {"healthReport", ""},
                    {"numContainers", 0},
                    {"usedMemoryMB", 0},
                    {"availMemoryMB", 4096},
                    {"usedVirtualCores", 0},
                    {"availableVirtualCores", 4},
                    {"resourceUtilization",
                     {{"nodePhysicalMemoryMB", 0},
                      {"nodeCPUUsage", 0},
                      {"containersPhysicalMemoryMB", 0},
                      {"containersCPUUsage", 0}}},
                    {"morpheusAttributes", json::object()},
                    {"morpheusDrained", false}};
  auto list = [&](const std::string& query) {
    Reply r = get("/ws/v1/cluster/nodes" + query, kAlice);
    EXPECT_EQ(r.status, 200) << query << ": " << r.show();
    return r.parsed();
  };
  EXPECT_EQ(list(""), (json{{"nodes", {{"node", json::array({nm1})}}}}));
  EXPECT_EQ(list("?states=LOST"), (json{{"nodes", {{"node", json::array({nm2})}}}}));
  EXPECT_EQ(list("?states=lost,%20running"),
            (json{{"nodes", {{"node", json::array({nm1, nm2})}}}}));
  EXPECT_EQ(list("?states=DECOMMISSIONED"), (json{{"nodes", {{"node", json::array()}}}}));

  Reply one = get("/ws/v1/cluster/nodes/nm1", kAlice);
  ASSERT_EQ(one.status, 200) << one.show();
  EXPECT_EQ(one.parsed(), (json{{"node", nm1}}));
  Reply lost = get("/ws/v1/cluster/nodes/nm2", kAlice);
  ASSERT_EQ(lost.status, 200) << lost.show();
  EXPECT_EQ(lost.parsed(), (json{{"node", nm2}}));

  Reply bad = get("/ws/v1/cluster/nodes?states=RUNNING,SLEEPING", kAlice);
  expectRemoteException(bad, 400, "BadRequestException",
                        "org.apache.hadoop.yarn.webapp.BadRequestException");
  EXPECT_EQ(messageOf(bad), "INVALID_ARGUMENT: states: invalid node state 'SLEEPING'");
  Reply unknown = get("/ws/v1/cluster/nodes/nm9", kAlice);
  expectRemoteException(unknown, 404, "NotFoundException",
                        "org.apache.hadoop.yarn.webapp.NotFoundException");
  EXPECT_EQ(messageOf(unknown), "NOT_FOUND: nodeId: node nm9 not found");
}

// Each app in YARN's shape with the values of its record and of the
// runtime: a running ad-hoc app, one waiting for its AM, one bound to a
// reservation (its queue is the reservation id) and a killed one.
TEST_F(ClusterRestTest, AppsReportEachAppInYarnShape) {
  ASSERT_NO_FATAL_FAILURE(buildKnownState());
  const std::string host = "http://127.0.0.1:" + std::to_string(port_);
  const json etl = {{"id", etl_.value()},
                    {"user", "alice"},
                    {"name", "etl"},
                    {"queue", "root.default"},
                    {"state", "RUNNING"},
                    {"finalStatus", "UNDEFINED"},
                    {"progress", 0.0},
                    {"trackingUI", "UNASSIGNED"},
                    {"trackingUrl", host + "/ws/v1/cluster/apps/" + etl_.value()},
                    {"diagnostics", ""},
                    {"applicationType", "MORPHEUS"},
                    {"applicationTags", "nightly,team=data"},
                    {"priority", 3},
                    {"startedTime", kT0},
                    {"launchTime", kT0},
                    {"finishedTime", 0},
                    {"elapsedTime", 11'000},
                    {"amContainerLogs", ""},
                    {"amHostHttpAddress", "nm1"},  // the AM's node id
                    {"allocatedMB", 3072},
                    {"allocatedVCores", 3},
                    {"runningContainers", 3},
                    {"reservedMB", 0},
                    {"reservedVCores", 0},
                    // Its 3 containers x 1024 MiB / 1 vcore for the 11 s they ran.
                    {"memorySeconds", 3 * 1024 * 11},
                    {"vcoreSeconds", 3 * 11},
                    {"reservationId", ""},
                    {"morpheusRecurrenceKey", ""},
                    {"morpheusAmAttempt", 1}};
  // The others differ from a waiting app in a few fields.
  auto waiting = [&](const AppId& id, const std::string& user, const std::string& name,
                     const std::string& queue) {
    json j = etl;
    j["id"] = id.value();
    j["user"] = user;
    j["name"] = name;
    j["queue"] = queue;
    j["state"] = "ACCEPTED";
    j["trackingUrl"] = host + "/ws/v1/cluster/apps/" + id.value();
    j["applicationTags"] = "";
    j["priority"] = 0;
    j["startedTime"] = kT1;
    j["launchTime"] = 0;
    j["elapsedTime"] = 0;
    j["amHostHttpAddress"] = "";
    j["allocatedMB"] = 0;
    j["allocatedVCores"] = 0;
    j["runningContainers"] = 0;
    j["memorySeconds"] = 0;
    j["vcoreSeconds"] = 0;
    j["morpheusAmAttempt"] = 0;
    return j;
  };
  const json probe = waiting(probe_, "bob", "probe", "root.other");
  json in_res = waiting(in_res_, "alice", "in-res", rid_);
  in_res["reservationId"] = rid_;
  json doomed = waiting(doomed_, "carol", "doomed", "root.default");
  doomed["state"] = "KILLED";
  doomed["finalStatus"] = "KILLED";
  doomed["finishedTime"] = kT1;
  doomed["diagnostics"] = "killed by carol: not needed";

  Reply all = get("/ws/v1/cluster/apps", kBob);  // any user reads every app (as YARN)
  ASSERT_EQ(all.status, 200) << all.show();
  EXPECT_EQ(all.parsed(), (json{{"apps", {{"app", json::array({etl, probe, in_res, doomed})}}}}))
      << all.body;
  for (const json& app : {etl, probe, in_res, doomed}) {
    const std::string id = app["id"];
    Reply one = get("/ws/v1/cluster/apps/" + id, kCarol);
    ASSERT_EQ(one.status, 200) << id << ": " << one.show();
    EXPECT_EQ(one.parsed(), (json{{"app", app}})) << one.body;
  }
}

// The app filters as YARN names them: states (and the deprecated state),
// queue (leaf path, its short form, or a reservation id), user, limit.
// A bad value is 400 BadRequestException naming the parameter as written;
// an unknown or malformed app id is 404 naming appId.
TEST_F(ClusterRestTest, AppFiltersSelectAndBadValuesAre400NamingTheParameter) {
  ASSERT_NO_FATAL_FAILURE(buildKnownState());
  auto ids = [&](const std::string& query) {
    Reply r = get("/ws/v1/cluster/apps?" + query, kAlice);
    EXPECT_EQ(r.status, 200) << query << ": " << r.show();
    const json j = r.parsed();  // not in the range-init: a temporary would dangle there
    std::vector<std::string> out;
    for (const auto& a : j["apps"]["app"]) out.push_back(a["id"]);
    return out;
  };
  using V = std::vector<std::string>;
  const std::string e = etl_.value(), p = probe_.value(), r = in_res_.value(), d = doomed_.value();
  EXPECT_EQ(ids("states=RUNNING"), V({e}));
  EXPECT_EQ(ids("states=accepted"), V({p, r}));
  EXPECT_EQ(ids("states=SUBMITTED"), V({p, r}));
  EXPECT_EQ(ids("states=killed,%20Running"), V({e, d}));
  EXPECT_EQ(ids("states=FINISHED,FAILED"), V{});
  EXPECT_EQ(ids("states=NEW,NEW_SAVING"), V{});  // valid, match no Morpheus app
  EXPECT_EQ(ids("state=KILLED"), V({d}));
  EXPECT_EQ(ids("states=RUNNING&state=KILLED"), V({e}));  // states wins
  EXPECT_EQ(ids("queue=default"), V({e, d}));
  EXPECT_EQ(ids("queue=root.default"), V({e, d}));
  EXPECT_EQ(ids("queue=other"), V({p}));
  EXPECT_EQ(ids("queue=" + rid_), V({r}));
  EXPECT_EQ(ids("queue=root.nothing"), V{});
  EXPECT_EQ(ids("user=alice"), V({e, r}));
  EXPECT_EQ(ids("user=alice&states=accepted"), V({r}));
  EXPECT_EQ(ids("limit=1"), V({e}));
  EXPECT_EQ(ids("limit=3"), V({e, p, r}));
  EXPECT_EQ(ids("limit=100"), V({e, p, r, d}));

  struct Bad {
    std::string query, message;
  };
  for (const Bad& b : std::vector<Bad>{
           {"states=DONE",
            "INVALID_ARGUMENT: states: invalid application state 'DONE' (NEW, NEW_SAVING, "
            "SUBMITTED, ACCEPTED, RUNNING, FINISHED, FAILED, KILLED)"},
           {"states=RUNNING,,bogus",
            "INVALID_ARGUMENT: states: invalid application state 'BOGUS' (NEW, NEW_SAVING, "
            "SUBMITTED, ACCEPTED, RUNNING, FINISHED, FAILED, KILLED)"},
           {"state=DONE",
            "INVALID_ARGUMENT: state: invalid application state 'DONE' (NEW, NEW_SAVING, "
            "SUBMITTED, ACCEPTED, RUNNING, FINISHED, FAILED, KILLED)"},
           {"limit=0", "INVALID_ARGUMENT: limit: '0' is not a positive integer"},
           {"limit=-1", "INVALID_ARGUMENT: limit: '-1' is not a positive integer"},
           {"limit=ten", "INVALID_ARGUMENT: limit: 'ten' is not a positive integer"},
           {"limit=5x", "INVALID_ARGUMENT: limit: '5x' is not a positive integer"},
           {"limit=", "INVALID_ARGUMENT: limit: '' is not a positive integer"},
       }) {
    Reply bad = get("/ws/v1/cluster/apps?" + b.query, kAlice);
    expectRemoteException(bad, 400, "BadRequestException",
                          "org.apache.hadoop.yarn.webapp.BadRequestException");
    EXPECT_EQ(messageOf(bad), b.message) << b.query;
  }

  for (const std::string& id : {std::string("application_0_0042"), std::string("not-an-app")}) {
    Reply missing = get("/ws/v1/cluster/apps/" + id, kAlice);
    expectRemoteException(missing, 404, "NotFoundException",
                          "org.apache.hadoop.yarn.webapp.NotFoundException");
    EXPECT_EQ(messageOf(missing), "NOT_FOUND: appId: application " + id + " not found");
  }
}

// The Fair Scheduler shape: root with the ad-hoc leaves (weights from the
// configuration, use, demand and app counts) and the reservation as a child
// whose minResources is its guarantee now.
TEST_F(ClusterRestTest, SchedulerNestsQueuesWithTheirFigures) {
  ASSERT_NO_FATAL_FAILURE(buildKnownState());
  Reply r = get("/ws/v1/cluster/scheduler", kAlice);
  ASSERT_EQ(r.status, 200) << r.show();
  auto res = [](int64_t mib, int64_t vcores) { return json{{"memory", mib}, {"vCores", vcores}}; };
  const json cluster = res(8192, 8);
  auto queue = [&](const std::string& type, const std::string& name, double weight, const json& min,
                   const json& used, const json& pending, bool preemptable, int pending_apps,
                   int active_apps, const std::string& kind) {
    return json{
        {"type", type},
        {"queueName", name},
        {"schedulingPolicy", "DRF"},
        {"weight", weight},
        {"minResources", min},
        {"maxResources", cluster},
        {"maxApps", INT32_MAX},  // no queue limits configured (YARN's unlimited)
        {"usedResources", used},
        {"demandResources", res(used["memory"].get<int64_t>() + pending["memory"].get<int64_t>(),
                                used["vCores"].get<int64_t>() + pending["vCores"].get<int64_t>())},
        {"clusterResources", cluster},
        {"reservedResources", res(0, 0)},
        {"preemptable", preemptable},
        {"numPendingApps", pending_apps},
        {"numActiveApps", active_apps},
        {"morpheusKind", kind},
        {"morpheusPendingResources", pending}};
  };
  const std::string leaf = "fairSchedulerLeafQueueInfo";
  json def = queue(leaf, "root.default", 3, res(0, 0), res(3072, 3), res(50 * 1024, 50), true, 0, 1,
                   "adhoc");
  json other = queue(leaf, "root.other", 1, res(0, 0), res(0, 0), res(0, 0), true, 1, 0, "adhoc");
  json reservation =
      queue(leaf, rid_, 1, res(2048, 2), res(0, 0), res(0, 0), false, 1, 0, "reservation-oneoff");
  json root = queue("fairSchedulerQueueInfo", "root", 1, res(0, 0), res(3072, 3),
                    res(50 * 1024, 50), true, 1, 1, "adhoc-parent");
  root["childQueues"] = {{"queue", json::array({def, other, reservation})}};
  EXPECT_EQ(
      r.parsed(),
      (json{{"scheduler", {{"schedulerInfo", {{"type", "fairScheduler"}, {"rootQueue", root}}}}}}))
      << r.body;
}

// harvest-classes: [] before any clustering; after one, each class with its
// pattern, figures, tenants and nodes as the runtime holds them.
TEST_F(ClusterRestTest, HarvestClassesListTheLastClustering) {
  ASSERT_NO_FATAL_FAILURE(registerNode("n1", 8, "127.0.0.1:45454", "127.0.0.1:8042"));
  ASSERT_NO_FATAL_FAILURE(registerNode("n2", 8, "127.0.0.2:45454", "127.0.0.2:8042"));
  Reply empty = get("/ws/v1/cluster/harvest-classes", kAlice);
  ASSERT_EQ(empty.status, 200) << empty.show();
  EXPECT_EQ(empty.parsed(), (json{{"harvestClasses", {{"harvestClass", json::array()}}}}));

  // Ten minutes of primary-tenant use: n1's tenant busy (5 cores), n2's idle.
  for (int i = 0; i < 10; i++) {
    for (const auto& [node, cpu] :
         std::vector<std::pair<std::string, double>>{{"n1", 5.0}, {"n2", 0.1}}) {
      v1::NodeHeartbeatRequest req;
      req.set_node_id(node);
      auto* u = req.mutable_primary_usage();
      u->set_tenant("web-" + node);
      u->set_cpu_vcores(cpu);
      u->set_memory_mib(100);
      v1::NodeHeartbeatResponse resp;
      ASSERT_TRUE(rm_->nodeHeartbeat(req, &resp).isOk());
    }
    clock_.advance(Millis(60'000));
  }
  ASSERT_TRUE(rm_->runtime().recomputeHarvestClasses().isOk());
  auto classes = rm_->runtime().harvestClasses();
  ASSERT_EQ(classes.size(), 2u);
  json expected = json::array();
  for (const auto& c : classes) {
    ASSERT_EQ(c.nodes.size(), 1u);
    ASSERT_EQ(c.cls.tenants.size(), 1u);
    expected.push_back({{"id", c.cls.id},
                        {"pattern", "constant"},
                        {"average", c.cls.average},
                        {"peak", c.cls.peak},
                        {"tenants", json::array({"web-" + c.nodes[0].value()})},
                        {"nodeIds", json::array({c.nodes[0].value()})}});
  }
  Reply r = get("/ws/v1/cluster/harvest-classes", kAlice);
  ASSERT_EQ(r.status, 200) << r.show();
  json got = r.parsed();
  EXPECT_EQ(got, (json{{"harvestClasses", {{"harvestClass", expected}}}})) << r.body;
  // The busy tenant's class averages 5/8 of its node, the idle one's 0.1/8.
  std::map<std::string, double> average;
  for (const auto& c : got["harvestClasses"]["harvestClass"]) {
    average[c["nodeIds"][0].get<std::string>()] = c["average"].get<double>();
  }
  EXPECT_NEAR(average["n1"], 5.0 / 8, 0.01) << r.body;
  EXPECT_NEAR(average["n2"], 0.1 / 8, 0.01) << r.body;
}

// Paths the RM does not serve are 404 (even with a token); a known path
// with another method is 405 with Allow naming the methods it has (RFC
// 9110); both in the REST's own error shape (YARN's RemoteException), like
// every other error under /ws/. The read-only REST has no write path, so no
// user (not even an admin) kills an app over HTTP (YARN's PUT .../state).
TEST_F(ClusterRestTest, UnknownPathsAre404AndOtherMethodsAre405) {
  ASSERT_NO_FATAL_FAILURE(buildKnownState());
  for (const char* t :
       {"/ws/v1/cluster/nope", "/ws/v1/clusterinfo", "/ws/v1/cluster/info/", "/ws/v1/cluster/apps/",
        "/ws/v1/cluster/nodes/", "/ws/v2/cluster/info", "/ws/v1/cluster/reservation/nope",
        "/ws/v1/cluster/appstatistics", "/ws/v1/cluster/../cluster/info"}) {
    Reply r = get(t, kOps);
    expectRemoteException(r, 404, "NotFoundException",
                          "org.apache.hadoop.yarn.webapp.NotFoundException");
    EXPECT_EQ(messageOf(r), "NOT_FOUND: no resource at " + std::string(t)) << r.show();
    EXPECT_EQ(get(t, "").status, 404) << t;
  }
  auto expect405 = [](const Reply& r, const std::string& allow) {
    expectRemoteException(r, 405, "WebApplicationException", "javax.ws.rs.WebApplicationException");
    EXPECT_EQ(r.headers.count("allow") ? r.headers.at("allow") : "", allow) << r.show();
  };
  for (const char* t :
       {"/ws/v1/cluster", "/ws/v1/cluster/info", "/ws/v1/cluster/metrics", "/ws/v1/cluster/nodes",
        "/ws/v1/cluster/apps", "/ws/v1/cluster/scheduler", "/ws/v1/cluster/harvest-classes"}) {
    for (const char* method : {"POST", "PUT", "DELETE", "PATCH"}) {
      SCOPED_TRACE(std::string(method) + " " + t);
      expect405(call(method, t, kOps, "{}"), "GET");
    }
  }
  Reply put = call("PUT", "/ws/v1/cluster/info", kOps, "{}");
  EXPECT_EQ(messageOf(put),
            "INVALID_ARGUMENT: method: PUT is not allowed on /ws/v1/cluster/info (allowed: GET)");
  expect405(call("GET", "/ws/v1/cluster/reservation/submit", kOps), "POST");
  expect405(call("GET", "/ws/v1/cluster/reservation/new-reservation", kOps), "POST");
  expect405(call("POST", "/ws/v1/cluster/reservation/list", kOps, "{}"), "GET");
  expect405(call("DELETE", "/ws/v1/cluster/reservation/delete", kOps), "POST");

  for (const std::string& who : {kBob, kAlice, kOps}) {
    Reply kill = call("PUT", "/ws/v1/cluster/apps/" + etl_.value() + "/state", who,
                      json{{"state", "KILLED"}}.dump());
    EXPECT_GE(kill.status, 400) << kill.show();
    EXPECT_LT(kill.status, 500) << kill.show();
  }
  EXPECT_EQ(rm_->apps().get(etl_)->state, AppState::kRunning);
}

// A user acts only as themself (docs/operator/security.md): bob may not
// update or delete alice's reservation, nor submit as her through YARN's
// user.name; an admin token may, and so may a user listed in rm.admins.
// Refused requests change nothing.
TEST_F(ClusterRestTest, ReservationRestActsOnlyForTheCallerUnlessAdmin) {
  ASSERT_NO_FATAL_FAILURE(buildKnownState());
  const std::string base = "/ws/v1/cluster/reservation";
  auto deadline = [&] {
    return toEpochMs(rm_->reservations().get(ReservationId(rid_))->def.deadline);
  };
  const std::string later =
      yarnReservation(rid_, "nightly", kT0, kT0 + 1'200'000, 2, 600'000).dump();
  const std::string del = json{{"reservation-id", rid_}}.dump();

  Reply upd = call("POST", base + "/update", kBob, later);
  expectRemoteException(upd, 403, "ForbiddenException",
                        "org.apache.hadoop.yarn.webapp.ForbiddenException");
  EXPECT_NE(messageOf(upd).find("bob"), std::string::npos) << upd.show();
  Reply refused = call("POST", base + "/delete", kBob, del);
  expectRemoteException(refused, 403, "ForbiddenException",
                        "org.apache.hadoop.yarn.webapp.ForbiddenException");
  // bob claims to be alice: the claim is refused, not believed.
  json as_alice = json::parse(later);
  as_alice["user"] = "alice";
  EXPECT_EQ(call("POST", base + "/update", kBob, as_alice.dump()).status, 403);
  EXPECT_EQ(call("POST", base + "/delete?user.name=alice", kBob, del).status, 403);
  EXPECT_EQ(deadline(), kT0 + 600'000);
  EXPECT_TRUE(rm_->reservations().get(ReservationId(rid_)).has_value());

  // A fresh id of alice's, submitted by alice as bob: 403 naming user; as
  // herself with a body user that contradicts user.name: 400 naming user.
  Reply fresh = call("POST", base + "/new-reservation", kAlice);
  ASSERT_EQ(fresh.status, 200) << fresh.show();
  const std::string id2 = fresh.parsed()["reservation-id"];
  const std::string doc2 =
      yarnReservation(id2, "other", kT0 + 3'600'000, kT0 + 4'200'000, 1, 60'000).dump();
  Reply as_bob = call("POST", base + "/submit?user.name=bob", kAlice, doc2);
  EXPECT_EQ(as_bob.status, 403) << as_bob.show();
  EXPECT_NE(messageOf(as_bob).find("user: alice may not"), std::string::npos) << as_bob.show();
  json mixed = json::parse(doc2);
  mixed["user"] = "alice";
  Reply contradiction = call("POST", base + "/submit?user.name=carol", kAlice, mixed.dump());
  expectRemoteException(contradiction, 400, "BadRequestException",
                        "org.apache.hadoop.yarn.webapp.BadRequestException");
  EXPECT_EQ(messageOf(contradiction),
            "INVALID_ARGUMENT: user: 'alice' differs from user.name 'carol'");
  EXPECT_FALSE(rm_->reservations().get(ReservationId(id2)).has_value());

  // An admin token updates alice's reservation; rooty (rm.admins) deletes it.
  Reply by_admin = call("POST", base + "/update", kOps, later);
  ASSERT_EQ(by_admin.status, 200) << by_admin.show();
  EXPECT_EQ(by_admin.parsed()["reservation-id"], rid_);
  EXPECT_EQ(deadline(), kT0 + 1'200'000);
  EXPECT_EQ(rm_->reservations().get(ReservationId(rid_))->def.user.value(), "alice");
  Reply by_rooty = call("POST", base + "/delete", kRooty, del);
  ASSERT_EQ(by_rooty.status, 200) << by_rooty.show();
  EXPECT_EQ(by_rooty.parsed(), json::object());
  EXPECT_FALSE(rm_->reservations().get(ReservationId(rid_)).has_value());
}

// The reservation list: alice's reservation with its definition and its
// placement (2 GiB, 2 vcores over [t0, t0 + 10 min)); bad time bounds are
// 400 naming the parameter as written.
TEST_F(ClusterRestTest, ReservationListShowsThePlacementAndRefusesBadBounds) {
  ASSERT_NO_FATAL_FAILURE(buildKnownState());
  Reply r = get("/ws/v1/cluster/reservation/list?reservation-id=" + rid_ +
                    "&include-resource-allocations=true",
                kBob);
  ASSERT_EQ(r.status, 200) << r.show();
  json list = r.parsed()["reservations"];
  ASSERT_EQ(list.size(), 1u) << r.body;
  const json& item = list[0];
  EXPECT_EQ(item["reservation-id"], rid_);
  EXPECT_EQ(item["user"], "alice");
  EXPECT_EQ(item["queue"], "default");
  EXPECT_EQ(item["acceptance-time"], kT0);
  EXPECT_EQ(item["morpheus-status"], "active");
  EXPECT_EQ(item["reservation-definition"]["arrival"], kT0);
  EXPECT_EQ(item["reservation-definition"]["deadline"], kT0 + 600'000);
  EXPECT_EQ(item["reservation-definition"]["reservation-name"], "nightly");
  // The allocations cover [t0, t0 + 10 min) at 2 GiB / 2 vcores, nothing else.
  int64_t covered = 0;
  for (const auto& a : item["resource-allocations"]) {
    EXPECT_EQ(a["resource"], (json{{"memory", 2048}, {"vCores", 2}})) << a.dump();
    EXPECT_GE(a["startTime"].get<int64_t>(), kT0) << a.dump();
    EXPECT_LE(a["endTime"].get<int64_t>(), kT0 + 600'000) << a.dump();
    covered += a["endTime"].get<int64_t>() - a["startTime"].get<int64_t>();
  }
  EXPECT_EQ(covered, 600'000) << item.dump();
  Reply bare = get("/ws/v1/cluster/reservation/list", kBob);
  ASSERT_EQ(bare.status, 200);
  EXPECT_EQ(bare.parsed()["reservations"][0]["resource-allocations"], json::array());

  struct Bad {
    std::string query, message;
  };
  for (const Bad& b : std::vector<Bad>{
           {"start-time=-1", "INVALID_ARGUMENT: start-time: must be >= 0"},
           {"start-time=soon", "INVALID_ARGUMENT: start-time: 'soon' is not an integer"},
           {"end-time=12h", "INVALID_ARGUMENT: end-time: '12h' is not an integer"},
           {"start-time=2000&end-time=1000",
            "INVALID_ARGUMENT: end-time: must not be before start-time"},
       }) {
    Reply bad = get("/ws/v1/cluster/reservation/list?" + b.query, kAlice);
    expectRemoteException(bad, 400, "BadRequestException",
                          "org.apache.hadoop.yarn.webapp.BadRequestException");
    EXPECT_EQ(messageOf(bad), b.message) << b.query;
  }
}

// No answer of either REST surface, to a user or an admin, carries a token,
// the RM's token key, a node's container-token key, an AM token or an app's
// launch context.
TEST_F(ClusterRestTest, NoAnswerCarriesASecret) {
  ASSERT_NO_FATAL_FAILURE(buildKnownState());
  std::vector<std::string> targets = clusterGets(etl_.value());
  targets.push_back("/ws/v1/cluster/nodes?states=RUNNING,LOST");
  targets.push_back("/ws/v1/cluster/reservation/list?include-resource-allocations=true");
  targets.push_back("/ws/v1/cluster/apps/nope");  // an error
  const std::vector<std::string> secrets = this->secrets();
  for (const std::string& who : {kAlice, kOps, std::string(), kNode, kExpired}) {
    for (const auto& t : targets) {
      Reply r = get(t, who);
      ASSERT_NE(r.status, 0) << t;
      for (const auto& s : secrets) {
        EXPECT_EQ(r.body.find(s), std::string::npos) << t << " carries a secret: " << r.body;
      }
    }
  }
}

// A query value that is not UTF-8 once percent-decoded ("%FF", "%C3%28")
// is 400 naming the parameter, the value shown as the client wrote it
// (percent-encoded, so the JSON answer is always encodable), on every
// endpoint that reads the query, before any handler runs; a raw byte
// outside ASCII in the target is 400 too (a URI is ASCII). Valid UTF-8 in a
// value still passes, and request text that reaches an answer unchecked (a
// header) is replaced, never a 500.
TEST_F(ClusterRestTest, QueryTextThatIsNotUtf8Is400NamingTheParameter) {
  ASSERT_NO_FATAL_FAILURE(buildKnownState());
  struct Bad {
    std::string target, message;
  };
  for (const Bad& b : std::vector<Bad>{
           {"/ws/v1/cluster/apps?states=%FF",
            "INVALID_ARGUMENT: states: '%FF' is not UTF-8 once percent-decoded"},
           {"/ws/v1/cluster/apps?limit=%FF",
            "INVALID_ARGUMENT: limit: '%FF' is not UTF-8 once percent-decoded"},
           {"/ws/v1/cluster/nodes?states=%C3%28",
            "INVALID_ARGUMENT: states: '%C3%28' is not UTF-8 once percent-decoded"},
           {"/ws/v1/cluster/reservation/list?start-time=%FF",
            "INVALID_ARGUMENT: start-time: '%FF' is not UTF-8 once percent-decoded"},
           {"/ws/v1/cluster/apps?user.name=%ED%A0%80",  // a UTF-16 surrogate
            "INVALID_ARGUMENT: user.name: '%ED%A0%80' is not UTF-8 once percent-decoded"},
           {"/ws/v1/cluster/apps?%FF=1",
            "INVALID_ARGUMENT: %FF: the name is not UTF-8 once percent-decoded"},
           {"/ws/v1/cluster/apps?queue=\xff",
            "INVALID_ARGUMENT: request target: byte 0xFF at offset 26 is not ASCII; a URI "
            "percent-encodes it (RFC 3986)"},
       }) {
    Reply r = get(b.target, kAlice);
    expectRemoteException(r, 400, "BadRequestException",
                          "org.apache.hadoop.yarn.webapp.BadRequestException");
    EXPECT_EQ(messageOf(r), b.message) << b.target;
  }
  Reply ok = get("/ws/v1/cluster/apps?queue=%C3%A9t%C3%A9", kAlice);
  EXPECT_EQ(ok.status, 200) << ok.show();
  // An id in the path is not decoded: "%FF" is a (missing) app's name.
  Reply path = get("/ws/v1/cluster/apps/%FF", kAlice);
  expectRemoteException(path, 404, "NotFoundException",
                        "org.apache.hadoop.yarn.webapp.NotFoundException");
  EXPECT_EQ(messageOf(path), "NOT_FOUND: appId: application %FF not found");
  // Header text is not checked, but a JSON answer built from it is still
  // encodable: the Host header of YARN's trackingUrl with a byte that is not
  // UTF-8 comes back as U+FFFD.
  Reply host = httpCall(port_, "GET", "/ws/v1/cluster/apps/" + probe_.value(), kAlice, "",
                        {{"Host", "rm\xff:8088"}});
  ASSERT_EQ(host.status, 200) << host.show();
  EXPECT_EQ(host.parsed()["app"]["trackingUrl"],
            "http://rm\xEF\xBF\xBD:8088/ws/v1/cluster/apps/" + probe_.value());
  // A raw byte in the path of no route is 404, the path shown percent-encoded.
  Reply raw = get("/ws/v1/nope\xff", kAlice);
  expectRemoteException(raw, 404, "NotFoundException",
                        "org.apache.hadoop.yarn.webapp.NotFoundException");
  EXPECT_EQ(messageOf(raw), "NOT_FOUND: no resource at /ws/v1/nope%FF");
}

// A malformed percent escape ('%' not followed by two hex digits) is 400
// naming the parameter rather than dropped or half-decoded, which would
// answer as if the client had asked something else.
TEST_F(ClusterRestTest, MalformedPercentEscapeIs400NamingTheParameter) {
  struct Bad {
    std::string target, message;
  };
  const std::string rule = " (a '%' is followed by two hex digits)";
  for (const Bad& b : std::vector<Bad>{
           {"/ws/v1/cluster/apps?limit=%zz",
            "INVALID_ARGUMENT: limit: malformed percent escape '%zz' in '%zz'" + rule},
           {"/ws/v1/cluster/apps?limit=%4g",
            "INVALID_ARGUMENT: limit: malformed percent escape '%4g' in '%4g'" + rule},
           {"/ws/v1/cluster/nodes?states=RUNNING%2",
            "INVALID_ARGUMENT: states: malformed percent escape '%2' in 'RUNNING%2'" + rule},
           {"/ws/v1/cluster/reservation/list?queue=%",
            "INVALID_ARGUMENT: queue: malformed percent escape '%' in '%'" + rule},
           {"/ws/v1/cluster/apps?lim%it=1",
            "INVALID_ARGUMENT: lim%it: malformed percent escape '%it' in the name" + rule},
       }) {
    Reply r = get(b.target, kAlice);
    expectRemoteException(r, 400, "BadRequestException",
                          "org.apache.hadoop.yarn.webapp.BadRequestException");
    EXPECT_EQ(messageOf(r), b.message) << b.target;
  }
  // Well-formed escapes of either case decode: "%2C" and "%2c" are commas.
  ASSERT_NO_FATAL_FAILURE(buildKnownState());
  Reply both = get("/ws/v1/cluster/nodes?states=RUNNING%2clost", kAlice);
  ASSERT_EQ(both.status, 200) << both.show();
  EXPECT_EQ(both.parsed()["nodes"]["node"].size(), 2u) << both.body;
}

// The read-only views act as nobody: every user reads the whole cluster
// view, so YARN's `user.name` names no one they could act for and is
// ignored (the answer is the caller's own, whoever it names); only a write,
// which acts as the user it names, refuses another user's name with 403
// (ReservationRestActsOnlyForTheCallerUnlessAdmin).
TEST_F(ClusterRestTest, ReadOnlyViewsIgnoreUserName) {
  ASSERT_NO_FATAL_FAILURE(buildKnownState());
  for (const std::string& t :
       {std::string("/ws/v1/cluster/apps"), "/ws/v1/cluster/apps/" + probe_.value(),
        std::string("/ws/v1/cluster/nodes"), std::string("/ws/v1/cluster/scheduler"),
        std::string("/ws/v1/cluster/reservation/list")}) {
    for (const std::string& who : {kAlice, kOps}) {
      Reply plain = get(t, who);
      ASSERT_EQ(plain.status, 200) << t << ": " << plain.show();
      const std::string sep = t.find('?') == std::string::npos ? "?" : "&";
      for (const char* name : {"bob", "alice", "nobody"}) {
        Reply named = get(t + sep + "user.name=" + name, who);
        EXPECT_EQ(named.status, 200) << t << " as " << name << ": " << named.show();
        EXPECT_EQ(named.body, plain.body) << t << " as " << name;
      }
    }
  }
  // The app list names every user's apps to alice, bob's included.
  Reply apps = get("/ws/v1/cluster/apps?user.name=alice", kAlice);
  const json list = apps.parsed()["apps"]["app"];
  std::set<std::string> users;
  for (const auto& a : list) users.insert(a["user"].get<std::string>());
  EXPECT_EQ(users, (std::set<std::string>{"alice", "bob", "carol"})) << apps.body;
}

// Another method on an app or a node (a subtree route, /apps/{id},
// /nodes/{id}) is 405 with Allow: GET, as on the exact paths, whether the
// id exists or not; a path below no route stays 404.
TEST_F(ClusterRestTest, OtherMethodsOnAnAppOrNodeAre405) {
  ASSERT_NO_FATAL_FAILURE(buildKnownState());
  for (const std::string& t : {"/ws/v1/cluster/apps/" + etl_.value(),
                               std::string("/ws/v1/cluster/apps/application_0_0042"),
                               std::string("/ws/v1/cluster/nodes/nm1")}) {
    for (const char* method : {"POST", "PUT", "DELETE"}) {
      Reply r = call(method, t, kOps, "{}");
      expectRemoteException(r, 405, "WebApplicationException",
                            "javax.ws.rs.WebApplicationException");
      EXPECT_EQ(r.headers.count("allow") ? r.headers.at("allow") : "", "GET") << method << " " << t;
    }
  }
  EXPECT_EQ(rm_->apps().get(etl_)->state, AppState::kRunning);
  EXPECT_EQ(call("DELETE", "/ws/v1/cluster/nodez/nm1", kOps).status, 404);
}

}  // namespace
}  // namespace morpheus::rm::httptest
