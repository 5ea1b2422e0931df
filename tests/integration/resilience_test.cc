// Resilience to node loss and bad input, end to end with real daemons: an
// acknowledged reservation survives node loss and is re-backed when the node
// returns; absurd node resources are refused at registration; rejected
// requests leave the plan and the list unchanged; an empty or shared state
// database stops the RM from starting.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "harness.h"

namespace morpheus::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// A one-off of `containers` x (1024 MiB, 1 vcore) in one gang over [arrival, arrival + 10 min).
json oneOff(int64_t arrival, int containers, int64_t window_ms = 600000) {
  return {{"arrival", arrival},
          {"deadline", arrival + window_ms},
          {"reservation-name", "resilience"},
          {"recurrence-expression", "0"},
          {"reservation-requests",
           {{"reservation-request-interpreter", 1},
            {"reservation-request", json::array({{{"capability", {{"memory", 1024}, {"vCores", 1}}},
                                                  {"num-containers", containers},
                                                  {"min-concurrency", containers},
                                                  {"duration", 600000}}})}}}};
}

// A plan-step (60 s) aligned time about an hour from now.
int64_t alignedHourAhead() { return (nowMs() / 60000 + 60) * 60000; }

class ResilienceIT : public ClusterTest {
 protected:
  // id -> reservation of `reservation list --json`.
  std::map<std::string, json> listed() {
    auto [code, out] = ctl({"reservation", "list", "--json"});
    std::map<std::string, json> m;
    auto j = json::parse(out, nullptr, false);
    if (code != 0 || j.is_discarded()) return m;
    for (const auto& r : j["reservations"]) m[r["reservation_id"]] = r;
    return m;
  }
  std::string status(const std::string& id) {
    auto m = listed();
    return m.count(id) ? m[id].value("status", "") : "<missing>";
  }
  // What a caller can observe of the reservation system: REST list and plan.
  std::string observable(int64_t from) {
    auto l = httpRequest(rm_.httpAddress(), "GET",
                         "/ws/v1/cluster/reservation/list?include-resource-allocations=true", "",
                         "application/json", bearer("alice"));
    auto [code, plan] = ctl({"plan", "show", "--json", "--from", std::to_string(from), "--to",
                             std::to_string(from + 4 * 3600000)});
    auto compact = json::parse(plan, nullptr, false);  // one line in a failure message
    return std::to_string(l.status) + l.body + std::to_string(code) +
           (compact.is_discarded() ? plan : compact.dump());
  }
  std::vector<std::string> nmArgs(const std::string& id, const std::string& resources) {
    std::vector<std::string> args = {
        "--rm",        rm_.grpcAddress(), "--node-id", id,
        "--resources", resources,         "--set",     "nm.heartbeat-interval=300ms"};
    for (auto& a : nmAuthArgs(id)) args.push_back(std::move(a));
    return args;
  }
};

// An NM down longer than rm.node-expiry does not delete an acknowledged one-off that
// no longer fits: it is listed "at-risk" (reason naming the capacity, REST and CLI), keeps its
// allocations, and is "active" again once the node returns. Old code deleted it.
TEST_F(ResilienceIT, OneOffSurvivesNodeLossAndReturnsToActive) {
  startCluster(2, {"--set", "rm.node-expiry=1500ms", "--set", "rm.heartbeat-interval=200ms"});
  const int64_t t0 = alignedHourAhead();
  std::string whole = submitReservation(oneOff(t0, 8));  // needs both NMs (2 x 4 vcores)
  std::string small = submitReservation(oneOff(t0 + 3600000, 1));
  ASSERT_FALSE(whole.empty());
  ASSERT_FALSE(small.empty());
  const json allocations = listed()[whole]["allocations"];
  ASSERT_FALSE(allocations.empty());

  ASSERT_EQ(nms_[1].signalAndWait(SIGKILL, 5s), 128 + SIGKILL);
  ASSERT_TRUE(waitFor([&] { return status(whole) == "at-risk"; }, 20s)) << status(whole) << "\n"
                                                                        << rm_.log();
  auto m = listed();
  EXPECT_NE(m[whole].value("status_reason", "").find("vcores:4"), std::string::npos)
      << m[whole].dump();
  EXPECT_EQ(m[whole]["allocations"], allocations) << "kept at its placement";
  EXPECT_EQ(m[small].value("status", ""), "active");
  auto rest = httpRequest(rm_.httpAddress(), "GET", "/ws/v1/cluster/reservation/list", "",
                          "application/json", bearer("alice"));
  EXPECT_NE(rest.body.find("\"at-risk\""), std::string::npos) << rest.body;

  nms_[1] = Process::startDaemon("nm", freshDir("nm"), nmArgs("nm2", "memory=4096,vcores=4"));
  ASSERT_FALSE(nms_[1].grpcAddress().empty()) << nms_[1].log();
  ASSERT_TRUE(waitFor([&] { return status(whole) == "active"; }, 20s)) << status(whole) << "\n"
                                                                       << rm_.log();
  EXPECT_EQ(listed()[whole]["allocations"], allocations);
}

// An NM offering memory=2^63-1 is refused at registration (INVALID_ARGUMENT naming
// total.memory_mib, in the NM's log); live nodes, plan capacity and reservations are unchanged.
TEST_F(ResilienceIT, AbsurdNodeResourcesAreRefusedAndChangeNothing) {
  startCluster(1);
  const int64_t t0 = alignedHourAhead();
  ASSERT_FALSE(submitReservation(oneOff(t0, 4)).empty());
  ASSERT_FALSE(submitReservation(oneOff(t0 + 600000, 2)).empty());
  const std::string before = observable(t0);
  Process absurd = Process::startDaemon("nm", freshDir("nm"),
                                        nmArgs("nm2", "memory=9223372036854775807,vcores=4"));
  ASSERT_TRUE(
      waitFor([&] { return absurd.log().find("total.memory_mib") != std::string::npos; }, 15s))
      << absurd.log();
  EXPECT_NE(absurd.log().find("refused registration"), std::string::npos) << absurd.log();
  auto [code, out] = ctl({"cluster", "status", "--json"});
  EXPECT_EQ(json::parse(out, nullptr, false)["live_nodes"], 1) << out;
  EXPECT_EQ(observable(t0), before);
  EXPECT_EQ(absurd.signalAndWait(SIGTERM, 10s), 0);
}

// Each rejected REST submit/update (bad UTF-8 user, unknown queue, bad
// stage, out-of-range priority, 2^31-1 containers, infeasible) gets 4xx naming the JSON path
// and leaves the REST list and the plan byte-identical. Old code: 500 and a phantom allocation
// for the UTF-8 case, 7 s of planning for 2^31-1 containers.
TEST_F(ResilienceIT, RejectedRestRequestsLeaveNoState) {
  startCluster(1, {}, "memory=8192,vcores=8");
  const int64_t t0 = alignedHourAhead();
  std::string kept = submitReservation(oneOff(t0, 4));
  ASSERT_FALSE(kept.empty());
  const std::string before = observable(t0);
  const std::string rr = "reservation-definition.reservation-requests.reservation-request[0].";
  struct Case {
    std::string what;
    json def;
    std::string queue;
    std::string user_query;  // "" = as alice, the owner of `kept`; else as the admin ops
                             // acting for the user named in the query
    int http;
    std::string names;
    bool update_refused;  // the same body as an update of `kept` is refused too
  };
  json zero = oneOff(t0 + 600000, 2);
  zero["reservation-requests"]["reservation-request"][0]["duration"] = 0;
  json prio = oneOff(t0 + 600000, 2);
  prio["priority"] = 5000;
  json huge = oneOff(t0 + 600000, 1);
  huge["reservation-requests"]["reservation-request"][0]["num-containers"] = 2147483647;
  json twice = oneOff(t0, 8);  // 16 containers in gangs of 8 = the whole cluster twice in 10 min
  twice["reservation-requests"]["reservation-request"][0]["num-containers"] = 16;
  std::vector<Case> cases = {
      {"bad UTF-8 user", oneOff(t0 + 600000, 2), "default", "?user.name=%FFalice", 400, "user",
       true},
      // An update keeps the reservation's queue: only the submit is refused.
      {"unknown queue", oneOff(t0 + 600000, 2), "nope", "", 400, "queue", false},
      {"zero duration", zero, "default", "", 400, rr + "duration", true},
      {"priority out of range", prio, "default", "", 400, "reservation-definition.priority", true},
      {"2^31-1 containers", huge, "default", "", 400, rr + "num-containers", true},
      {"infeasible", twice, "default", "", 409, "PlanningException", true},
  };
  for (const auto& c : cases) {
    // Only an admin may act for a user named in the request.
    const auto auth = bearer(c.user_query.empty() ? "alice" : "ops");
    auto n = httpRequest(rm_.httpAddress(), "POST", "/ws/v1/cluster/reservation/new-reservation",
                         "", "application/json", auth);
    std::string id = json::parse(n.body, nullptr, false).value("reservation-id", "");
    json body = {{"reservation-id", id}, {"queue", c.queue}, {"reservation-definition", c.def}};
    const std::string as = c.user_query;
    auto r = httpRequest(rm_.httpAddress(), "POST", "/ws/v1/cluster/reservation/submit" + as,
                         body.dump(), "application/json", auth);
    EXPECT_EQ(r.status, c.http) << c.what << ": " << r.body;
    EXPECT_NE(r.body.find(c.names), std::string::npos) << c.what << ": " << r.body;
    EXPECT_EQ(observable(t0), before) << "submit left state: " << c.what;
    if (!c.update_refused) continue;
    body["reservation-id"] = kept;
    auto u = httpRequest(rm_.httpAddress(), "POST", "/ws/v1/cluster/reservation/update" + as,
                         body.dump(), "application/json", auth);
    EXPECT_GE(u.status, 400) << c.what << ": " << u.body;
    EXPECT_LT(u.status, 500) << c.what << ": " << u.body;
    EXPECT_EQ(observable(t0), before) << "update left state: " << c.what;
  }
}

// An existing 0-byte state database stops the RM (exit 2, one line naming the
// file) unless state-store.init is set.
TEST(ResilienceStartupIT, EmptyStateDatabaseIsRefusedUnlessInit) {
  std::string dir = freshDir("rm");
  std::ofstream(dir + "/rm-state.db").flush();
  std::vector<std::string> args = {"--set", "rm.token-file=" + testTokenFile()};
  Process rm = Process::startDaemon("rm", dir, args);
  EXPECT_EQ(rm.wait(10s), 2) << rm.log();
  EXPECT_NE(rm.log().find(dir + "/rm-state.db"), std::string::npos) << rm.log();
  EXPECT_NE(rm.log().find("0-byte"), std::string::npos) << rm.log();
  args.insert(args.end(), {"--set", "state-store.init=true"});
  Process init = Process::startDaemon("rm", dir, args);
  EXPECT_FALSE(init.grpcAddress().empty()) << init.log();
  EXPECT_EQ(init.signalAndWait(SIGTERM, 10s), 0);
}

// A state database deleted (not truncated) from a data dir that holds the RM's
// token-secret stops the RM the same way (exit 2, naming the file and the way
// out) unless state-store.init is set; a new data dir still starts empty.
// Before, the RM started with no reservations and no applications.
TEST(ResilienceStartupIT, DeletedStateDatabaseIsRefusedUnlessInit) {
  std::string dir = freshDir("rm");
  std::vector<std::string> args = {"--set", "rm.token-file=" + testTokenFile()};
  {
    Process first = Process::startDaemon("rm", dir, args);
    ASSERT_FALSE(first.grpcAddress().empty()) << first.log();
    ASSERT_EQ(first.signalAndWait(SIGTERM, 10s), 0) << first.log();
  }
  ASSERT_TRUE(std::filesystem::exists(dir + "/token-secret"));
  for (const char* suffix : {"", "-wal", "-shm"}) {
    std::filesystem::remove(dir + "/rm-state.db" + suffix);
  }
  Process rm = Process::startDaemon("rm", dir, args);
  EXPECT_EQ(rm.wait(10s), 2) << rm.log();
  EXPECT_NE(rm.log().find(dir + "/rm-state.db"), std::string::npos) << rm.log();
  EXPECT_NE(rm.log().find("state-store.init"), std::string::npos) << rm.log();
  EXPECT_FALSE(std::filesystem::exists(dir + "/rm-state.db")) << "the refusal created the file";
  args.insert(args.end(), {"--set", "state-store.init=true"});
  Process init = Process::startDaemon("rm", dir, args);
  EXPECT_FALSE(init.grpcAddress().empty()) << init.log();
  EXPECT_EQ(init.signalAndWait(SIGTERM, 10s), 0);
}

// A second RM with another data dir but the same database file is refused (exit
// 2, naming the file); the first keeps running.
TEST(ResilienceStartupIT, SecondRmOnTheSameDatabaseIsRefused) {
  std::string a = freshDir("rm"), b = freshDir("rm");
  std::vector<std::string> args = {"--set", "rm.token-file=" + testTokenFile()};
  Process first = Process::startDaemon("rm", a, args);
  ASSERT_FALSE(first.grpcAddress().empty()) << first.log();
  args.insert(args.end(), {"--set", "state-store.location=" + a + "/rm-state.db"});
  Process second = Process::startDaemon("rm", b, args);
  EXPECT_EQ(second.wait(10s), 2) << second.log();
  EXPECT_NE(second.log().find(a + "/rm-state.db"), std::string::npos) << second.log();
  EXPECT_NE(second.log().find("locked"), std::string::npos) << second.log();
  EXPECT_TRUE(first.running());
  EXPECT_EQ(first.signalAndWait(SIGTERM, 10s), 0);
}

// An NM whose --node-id contains '|', '/' or ".." refuses to start (exit 2).
TEST(ResilienceStartupIT, NodeIdsWithSeparatorsAreRefused) {
  for (std::string bad : {"a|b", "../x", "a/b"}) {
    Process nm =
        Process::startDaemon("nm", freshDir("nm"), {"--rm", "127.0.0.1:1", "--node-id", bad});
    EXPECT_EQ(nm.wait(10s), 2) << bad << ": " << nm.log();
    EXPECT_NE(nm.log().find("nm.node-id"), std::string::npos) << nm.log();
  }
}

}  // namespace
}  // namespace morpheus::testing
