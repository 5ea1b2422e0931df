// Reservation planning against real daemons: an RM with two NMs on loopback,
// huge reservation submissions sent concurrently over real gRPC. Planning runs
// on a snapshot of the plan, off the lock the scheduling strand needs, so node
// heartbeats and ListNodes keep being answered while the submissions are still
// planning; requests beyond rm.max-planning-work and the planning lane's
// bounds are refused with errors naming the field and the option.
#include <gtest/gtest.h>

#include <fstream>
#include <future>
#include <sstream>

#include <grpcpp/grpcpp.h>

#include "common/wire.h"
#include "harness.h"
#include "morpheus/v1/client.grpc.pb.h"
#include "morpheus/v1/reservation.grpc.pb.h"

namespace morpheus::testing {
namespace {

using namespace std::chrono_literals;

// Value of an unlabelled metric in Prometheus text, -1 when absent.
double metricValue(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + " ", 0) == 0) return std::stod(line.substr(name.size() + 1));
  }
  return -1;
}

struct Outcome {
  grpc::Status status;
  std::string id;
};

class PlanningIT : public ClusterTest {
 protected:
  // Stages of the "huge" requests that are admitted: enough that LowCost
  // plans for seconds on a quiet machine, few enough that three at once end
  // within the test's time on a loaded one (the planner's work grows with
  // stages x window steps).
  static constexpr int kStages = 1500;
  std::unique_ptr<grpc::ClientContext> context(const std::string& principal, Millis deadline) {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->AddMetadata("authorization", "Bearer " + testToken(principal));
    ctx->set_deadline(std::chrono::system_clock::now() + deadline);
    return ctx;
  }
  // The attack's request: `stages` one-container stages (1 GiB, 1 vcore,
  // 1 min each, any order) over [now + 1 h, now + 1 h + 6.9 days - 1 h).
  v1::SubmitReservationRequest request(const std::string& id, int stages) {
    const int64_t arrival = (nowMs() / 60000 + 60) * 60000;
    v1::SubmitReservationRequest req;
    req.set_reservation_id(id);
    req.set_queue("default");
    auto* d = req.mutable_definition();
    d->set_arrival_ms(arrival);
    d->set_deadline_ms(arrival + static_cast<int64_t>(6.9 * 86400000) - 3600000);
    d->set_name("huge");
    d->set_interpreter(v1::R_ALL);
    for (int i = 0; i < stages; ++i) {
      auto* s = d->add_stages();
      s->mutable_capability()->set_memory_mib(1024);
      s->mutable_capability()->set_vcores(1);
      s->set_num_containers(1);
      s->set_min_concurrency(1);
      s->set_duration_ms(60000);
    }
    return req;
  }
  // A reservation id NewReservation issues to `principal` (ids are their
  // caller's: a submit under any other id is refused).
  std::string issue(const std::string& principal) {
    auto stub = v1::ReservationService::NewStub(makeChannel(rm_.grpcAddress(), TlsOptions{}));
    auto ctx = context(principal, Millis(10000));
    v1::NewReservationResponse resp;
    grpc::Status st = stub->NewReservation(ctx.get(), v1::NewReservationRequest(), &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return resp.reservation_id();
  }
  Outcome submit(const std::string& principal, const v1::SubmitReservationRequest& req) {
    auto stub = v1::ReservationService::NewStub(makeChannel(rm_.grpcAddress(), TlsOptions{}));
    auto ctx = context(principal, Millis(600000));
    v1::SubmitReservationResponse resp;
    Outcome o;
    o.status = stub->SubmitReservation(ctx.get(), req, &resp);
    o.id = req.reservation_id();
    return o;
  }
  // ListNodes as alice (5 s deadline, as morpheusctl's): the live nodes, -1 on an error.
  int listNodes() {
    auto stub = v1::ClientService::NewStub(makeChannel(rm_.grpcAddress(), TlsOptions{}));
    auto ctx = context("alice", Millis(5000));
    v1::ListNodesResponse resp;
    grpc::Status st = stub->ListNodes(ctx.get(), v1::ListNodesRequest(), &resp);
    return st.ok() ? resp.nodes_size() : -1;
  }
  // Plans the RM is computing now (its gauge).
  double planningRunning() {
    return metricValue(httpRequest(rm_.httpAddress(), "GET", "/metrics").body,
                       "morpheus_rm_planning_running");
  }
  double nmMetric(size_t nm, const std::string& name) {
    return metricValue(httpRequest(nms_[nm].httpAddress(), "GET", "/metrics").body, name);
  }
};

// Three users submit 1500-stage reservations over 6.9 days at once (the
// attack's shape at 15% of its stages, so the run stays short even on a
// loaded machine: seconds of LowCost each). Once they plan, both NMs'
// heartbeats keep succeeding (five more each) and ListNodes answers five
// times; at least one such round ends while planning still runs (the RM's
// planning gauge), so the check is not vacuous on a fast machine; none of the
// NMs' heartbeats fails.
// Each submission is then answered (admitted), and the RM still answers.
// On the old code planning held the reservation lock the strand's plan
// follower and node registration need: heartbeats stalled behind it and
// ListNodes (behind the runtime's lock) timed out.
TEST_F(PlanningIT, HeartbeatsAndListNodesAnswerWhileHugeSubmissionsPlan) {
  startCluster(2, {"--set", "rm.max-planning-work=1000000000000"}, "memory=65536,vcores=64");
  const std::vector<std::string> users = {"alice", "bob", "mallory"};
  std::vector<std::future<Outcome>> subs;
  std::vector<std::string> ids;
  for (const auto& u : users) ids.push_back(issue(u));
  for (size_t i = 0; i < users.size(); ++i) {
    auto req = request(ids[i], kStages);
    subs.push_back(
        std::async(std::launch::async, [this, u = users[i], req] { return submit(u, req); }));
  }
  const double failures_before = nmMetric(0, "morpheus_nm_heartbeat_failures_total") +
                                 nmMetric(1, "morpheus_nm_heartbeat_failures_total");
  ASSERT_TRUE(waitFor([&] { return planningRunning() >= 1; }, 60s)) << rm_.log();
  int answered = 0;
  int rounds_while_planning = 0;
  for (int round = 0; round < 5; ++round) {
    for (size_t nm = 0; nm < 2; ++nm) {
      const double hb = nmMetric(nm, "morpheus_nm_heartbeats_total");
      ASSERT_TRUE(waitFor([&] { return nmMetric(nm, "morpheus_nm_heartbeats_total") > hb; }, 60s))
          << "nm" << nm + 1 << " got no heartbeat answered\n"
          << rm_.log();
    }
    answered += listNodes() == 2 ? 1 : 0;
    if (planningRunning() >= 1) ++rounds_while_planning;
  }
  EXPECT_EQ(answered, 5) << "ListNodes failed while the submissions planned";
  EXPECT_GE(rounds_while_planning, 1)
      << "planning ended before a round of heartbeats and ListNodes did: they waited for it";
  for (auto& f : subs) {
    Outcome o = f.get();
    EXPECT_TRUE(o.status.ok()) << o.id << ": " << o.status.error_message();
  }
  EXPECT_EQ(nmMetric(0, "morpheus_nm_heartbeat_failures_total") +
                nmMetric(1, "morpheus_nm_heartbeat_failures_total"),
            failures_before)
      << "heartbeats failed while planning";
  EXPECT_EQ(listNodes(), 2);
  auto [code, out] = ctl({"reservation", "list", "--json"});
  EXPECT_EQ(code, 0) << out;
  for (const auto& id : ids) EXPECT_NE(out.find(id), std::string::npos) << out;
}

// With the defaults, the attack's request is refused before planning, over
// gRPC and through morpheusctl: INVALID_ARGUMENT naming definition.stages
// (morpheusctl: the file's reservation-request, as it spells it) and
// rm.max-planning-work; nothing is admitted.
TEST_F(PlanningIT, WorkOverTheCapIsRefusedNamingTheFieldAndOption) {
  startCluster(1, {}, "memory=65536,vcores=64");
  Outcome o = submit("alice", request("too-big", 10000));
  EXPECT_EQ(o.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << o.status.error_message();
  EXPECT_EQ(o.status.error_message().rfind("definition.stages: 10000 stages x ", 0), 0u)
      << o.status.error_message();
  EXPECT_NE(o.status.error_message().find("rm.max-planning-work"), std::string::npos)
      << o.status.error_message();
  // morpheusctl shows it too (3000 stages over the same window: also over the default).
  const auto req = request("unused", 0);
  nlohmann::json stages = nlohmann::json::array();
  for (int i = 0; i < 3000; ++i) {
    stages.push_back({{"capability", {{"memory", 1024}, {"vCores", 1}}},
                      {"num-containers", 1},
                      {"min-concurrency", 1},
                      {"duration", 60000}});
  }
  nlohmann::json def = {
      {"arrival", req.definition().arrival_ms()},
      {"deadline", req.definition().deadline_ms()},
      {"reservation-name", "cli"},
      {"recurrence-expression", "0"},
      {"reservation-requests",
       {{"reservation-request-interpreter", 1}, {"reservation-request", stages}}}};
  const std::string file = freshDir("res") + "/r.json";
  std::ofstream(file) << nlohmann::json({{"queue", "default"}, {"reservation-definition", def}});
  auto [code, out] = ctl({"reservation", "submit", "-f", file});
  EXPECT_NE(code, 0) << out;
  EXPECT_NE(out.find("reservation-definition.reservation-requests.reservation-request: 3000 "
                     "stages x "),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("rm.max-planning-work"), std::string::npos) << out;
  auto [lc, listed] = ctl({"reservation", "list", "--json"});
  EXPECT_EQ(lc, 0) << listed;
  EXPECT_EQ(listed.find("too-big"), std::string::npos) << listed;
  EXPECT_EQ(listed.find("\"cli\""), std::string::npos) << listed;
}

// The work cap raised: alice's second request while her first still plans is
// refused at once, UNAVAILABLE naming rm.max-planning-requests-per-user, and
// leaves nothing; the first is admitted.
TEST_F(PlanningIT, SecondRequestOfAUserWhileOnePlansIsRefusedNamingTheOption) {
  startCluster(1, {"--set", "rm.max-planning-work=1000000000000"}, "memory=65536,vcores=64");
  const std::string first_id = issue("alice");
  const std::string second_id = issue("alice");
  auto first = std::async(std::launch::async,
                          [this, first_id] { return submit("alice", request(first_id, kStages)); });
  ASSERT_TRUE(waitFor([&] { return planningRunning() == 1; }, 60s)) << rm_.log();
  Outcome second = submit("alice", request(second_id, 10));
  EXPECT_EQ(first.wait_for(0s), std::future_status::timeout) << "the refusal waited for planning";
  EXPECT_EQ(second.status.error_code(), grpc::StatusCode::UNAVAILABLE)
      << second.status.error_message();
  EXPECT_NE(second.status.error_message().find("rm.max-planning-requests-per-user"),
            std::string::npos)
      << second.status.error_message();
  Outcome f = first.get();
  EXPECT_TRUE(f.status.ok()) << f.status.error_message();
  auto [lc, listed] = ctl({"reservation", "list", "--json"});
  EXPECT_EQ(lc, 0) << listed;
  EXPECT_NE(listed.find("\"" + first_id + "\""), std::string::npos) << listed;
  EXPECT_EQ(listed.find("\"" + second_id + "\""), std::string::npos) << listed;
}

}  // namespace
}  // namespace morpheus::testing
