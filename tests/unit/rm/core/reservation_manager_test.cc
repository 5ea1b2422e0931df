// ReservationManager over a real SQLite store with the virtual clock:
// persistence and recovery, queue/ACL checks, capacity grace, DRA budget.
#include <gtest/gtest.h>

#include "rm/core/reservation_manager.h"

#include <nlohmann/json.hpp>

#include "../test_db.h"

namespace morpheus::rm {
namespace {

class ReservationManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = freshTestDb("rmgr");
    store_ = std::move(store::openStateStore("sqlite", path_)).value();
    mgr_ = make();
    mgr_->onCapacity(Resource(10240, 10), true);
  }
  std::unique_ptr<ReservationManager> make() {
    ReservationManagerOptions o;
    o.admins = {"root"};
    return std::make_unique<ReservationManager>(
        o, std::move(planner::Planner::create({}, Resource())).value(), *store_, clock_, metrics_);
  }
  planner::ReservationDefinition def(int containers, Millis period = Millis(0)) {
    planner::ReservationDefinition d;
    d.user = UserId("alice");
    d.queue = "default";
    d.arrival = clock_.now() + Millis(3600000);
    d.deadline = d.arrival + Millis(1800000);
    d.period = period;
    d.stages = {{Resource(1024, 1), containers, 1, Millis(600000)}};
    return d;
  }
  VirtualClock clock_{fromEpochMs(1800000000000)};
  MetricsRegistry metrics_;
  std::string path_;
  std::unique_ptr<store::StateStore> store_;
  std::unique_ptr<ReservationManager> mgr_;
};

// An admitted reservation is persisted; a new manager recovers identical placements.
TEST_F(ReservationManagerTest, RecoversIdenticalPlacements) {
  auto r = mgr_->submit(ReservationId("r1"), def(5, Millis(86400000)), 60000, nullptr);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  auto again = make();
  ASSERT_TRUE(again->recover().isOk());
  auto got = again->get(ReservationId("r1"));
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->placement, r->placement);
  EXPECT_EQ(got->budget_container_ms, 60000);
  TimePoint t = r->placement.allocations.front().start;
  EXPECT_EQ(again->guaranteedAt(ReservationId("r1"), t),
            mgr_->guaranteedAt(ReservationId("r1"), t));
}

// A stored placement holding more than its definition allows (here 50 containers
// at once for a 5-container definition) stops recovery with an error naming the reservation.
TEST_F(ReservationManagerTest, RecoverRefusesPlacementBeyondDefinition) {
  ASSERT_TRUE(mgr_->submit(ReservationId("r1"), def(5), 0, nullptr).isOk());
  auto text = *store_->get("reservations", "r1");
  ASSERT_TRUE(text.has_value());
  auto j = nlohmann::json::parse(*text);
  j["placement"]["allocations"][0]["resource"]["vcores"] = 50;
  j["placement"]["allocations"][0]["resource"]["memory_mib"] = 50 * 1024;
  ASSERT_TRUE(store_->commit({{"reservations", "r1", j.dump()}}).isOk());
  auto again = make();
  Status st = again->recover();
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("r1"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("exceeds what the definition allows"), std::string::npos)
      << st.message();
}

// Ids from issueId belong to their caller, durably: another user (even
// acting as an admin for a third) cannot use them, a non-admin cannot use an
// id nobody was issued, an admin can; admission consumes the issue; a
// restarted manager keeps unused issues and never issues a used id again.
TEST_F(ReservationManagerTest, IssuedIdsBelongToTheirCaller) {
  using By = ReservationManager::Submitter;
  auto alices = mgr_->issueId(UserId("alice"));
  ASSERT_TRUE(alices.isOk()) << alices.status().toString();
  auto d = def(1);
  d.user = UserId("bob");
  auto squat = mgr_->submit(*alices, By{UserId("bob"), false}, d, 0, nullptr);
  EXPECT_EQ(squat.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(squat.status().message().find("reservation_id: '" + alices->value() +
                                          "' was issued to another user"),
            std::string::npos)
      << squat.status().message();
  EXPECT_EQ(mgr_->submit(*alices, By{UserId("root"), true}, d, 0, nullptr).status().code(),
            StatusCode::kPermissionDenied)
      << "an admin acting for bob does not get alice's id";
  auto made_up = mgr_->submit(ReservationId("bobs-own"), By{UserId("bob"), false}, d, 0, nullptr);
  EXPECT_EQ(made_up.status().code(), StatusCode::kPermissionDenied);
  EXPECT_TRUE(mgr_->list("", "", TimePoint(), TimePoint()).empty());

  auto later = mgr_->issueId(UserId("alice"));
  ASSERT_TRUE(later.isOk());
  auto restarted = make();
  ASSERT_TRUE(restarted->recover().isOk());
  restarted->onCapacity(Resource(10240, 10), true);
  EXPECT_EQ(restarted->submit(*later, By{UserId("bob"), false}, d, 0, nullptr).status().code(),
            StatusCode::kPermissionDenied);
  ASSERT_TRUE(restarted->submit(*alices, By{UserId("alice"), false}, def(1), 0, nullptr).isOk());
  EXPECT_TRUE(restarted->submit(ReservationId("ops-chosen"), By{UserId("root"), true}, def(1), 0,
                                nullptr)
                  .isOk());
  auto again = make();
  ASSERT_TRUE(again->recover().isOk());
  again->onCapacity(Resource(10240, 10), true);
  for (int i = 0; i < 5; i++) {
    auto fresh = again->issueId(UserId("carol"));
    ASSERT_TRUE(fresh.isOk());
    EXPECT_NE(*fresh, *alices);
    EXPECT_NE(*fresh, *later);
  }
  EXPECT_TRUE(again->submit(*later, By{UserId("alice"), false}, def(1), 0, nullptr).isOk());
}

// Beyond max_unused_ids_per_user the caller's oldest unused id is withdrawn.
TEST_F(ReservationManagerTest, OldestUnusedIdIsWithdrawnBeyondTheCap) {
  ReservationManagerOptions o;
  o.limits.max_unused_ids_per_user = 2;
  ReservationManager capped(o, std::move(planner::Planner::create({}, Resource())).value(),
                            *store_, clock_, metrics_);
  capped.onCapacity(Resource(10240, 10), true);
  auto first = capped.issueId(UserId("alice"));
  clock_.advance(Millis(1));
  auto second = capped.issueId(UserId("alice"));
  clock_.advance(Millis(1));
  auto third = capped.issueId(UserId("alice"));
  ASSERT_TRUE(first.isOk() && second.isOk() && third.isOk());
  EXPECT_EQ(store_->list("reservation-ids")->size(), 2u);
  using By = ReservationManager::Submitter;
  EXPECT_EQ(capped.submit(*first, By{UserId("alice"), false}, def(1), 0, nullptr).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_TRUE(capped.submit(*second, By{UserId("alice"), false}, def(1), 0, nullptr).isOk());
  EXPECT_EQ(store_->list("reservation-ids")->size(), 1u) << "admission consumes the issue";
}

// Unknown queues, bad ids and duplicates are refused and leave nothing behind.
TEST_F(ReservationManagerTest, RejectionsLeaveNoState) {
  auto d = def(2);
  d.queue = "nope";
  auto r = mgr_->submit(ReservationId("r1"), d, 0, nullptr);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("queue"), std::string::npos);
  EXPECT_FALSE(mgr_->submit(ReservationId("bad id!"), def(2), 0, nullptr).isOk());
  ASSERT_TRUE(mgr_->submit(ReservationId("r1"), def(2), 0, nullptr).isOk());
  EXPECT_EQ(mgr_->submit(ReservationId("r1"), def(2), 0, nullptr).status().code(),
            StatusCode::kAlreadyExists);
  planner::InfeasibilityExplanation why;
  auto big = mgr_->submit(ReservationId("r2"), def(1000), 0, &why);
  EXPECT_EQ(big.status().code(), StatusCode::kInfeasible);
  EXPECT_FALSE(why.toString().empty());
  EXPECT_EQ((*store_->list("reservations")).size(), 1u);
}

// Only the owner or an admin may update or delete.
TEST_F(ReservationManagerTest, OwnerOrAdminOnly) {
  ASSERT_TRUE(mgr_->submit(ReservationId("r1"), def(2), 0, nullptr).isOk());
  EXPECT_EQ(mgr_->update(ReservationId("r1"), UserId("bob"), def(3), 0, nullptr).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(mgr_->remove(ReservationId("r1"), UserId("bob")).code(), StatusCode::kPermissionDenied);
  EXPECT_TRUE(mgr_->update(ReservationId("r1"), UserId("root"), def(3), 0, nullptr).isOk());
  EXPECT_TRUE(mgr_->remove(ReservationId("r1"), UserId("alice")).isOk());
  EXPECT_TRUE((*store_->list("reservations")).empty());
}

// During the start-up grace capacity never drops; afterwards a one-off that no longer fits is
// kept at its placement with status "at-risk" (persisted), and becomes "active" again, same
// placement, when capacity returns.
TEST_F(ReservationManagerTest, CapacityGraceThenAtRiskThenActive) {
  auto admitted = mgr_->submit(ReservationId("r1"), def(8), 0, nullptr);
  ASSERT_TRUE(admitted.isOk());
  mgr_->onCapacity(Resource(), false);
  EXPECT_EQ(mgr_->get(ReservationId("r1"))->status, "active")
      << "no change while nodes re-register";
  // 8 x 10 min of one container cannot fit a 30 min window on one vcore.
  mgr_->onCapacity(Resource(1024, 1), true);
  auto r = mgr_->get(ReservationId("r1"));
  ASSERT_TRUE(r.has_value()) << "an acknowledged reservation is never deleted by the system";
  EXPECT_EQ(r->status, "at-risk");
  EXPECT_NE(r->status_reason.find("<memory:1024 MiB, vcores:1>"), std::string::npos)
      << r->status_reason;
  EXPECT_EQ(r->placement, admitted->placement);
  auto stored = *store_->get("reservations", "r1");
  ASSERT_TRUE(stored.has_value());
  EXPECT_NE(stored->find("\"at-risk\""), std::string::npos);
  mgr_->onCapacity(Resource(10240, 10), true);
  r = mgr_->get(ReservationId("r1"));
  EXPECT_EQ(r->status, "active");
  EXPECT_TRUE(r->status_reason.empty());
  EXPECT_EQ(r->placement, admitted->placement);
  EXPECT_NE((*store_->get("reservations", "r1"))->find("\"active\""), std::string::npos);
}

// An at-risk reservation is still at risk after an RM restart (recovered status), and the
// first capacity report after the grace reconciles it even when the capacity is unchanged.
TEST_F(ReservationManagerTest, AtRiskSurvivesRestartAndReconciles) {
  ASSERT_TRUE(mgr_->submit(ReservationId("r1"), def(8), 0, nullptr).isOk());
  mgr_->onCapacity(Resource(1024, 1), true);
  ASSERT_EQ(mgr_->get(ReservationId("r1"))->status, "at-risk");
  auto again = make();
  ASSERT_TRUE(again->recover().isOk());
  EXPECT_EQ(again->get(ReservationId("r1"))->status, "at-risk");
  again->onCapacity(Resource(10240, 10), false);  // grace: nodes re-register
  EXPECT_EQ(again->get(ReservationId("r1"))->status, "at-risk");
  again->onCapacity(Resource(10240, 10), true);  // grace over, same capacity
  EXPECT_EQ(again->get(ReservationId("r1"))->status, "active");
}

// A fingerprint of everything a caller can observe: plan load per step, records, store rows.
std::string observable(ReservationManager& m, store::StateStore& s, TimePoint from) {
  std::string out;
  auto snap = m.plan(from, from + Millis(8 * 86400000LL));
  out += std::to_string(snap.reservations) + ";";
  for (const auto& st : snap.steps) out += st.periodic.toString() + st.one_off.toString() + ",";
  for (const auto& r : m.list("", "", TimePoint(), TimePoint())) {
    out += r.id.value() + "=" + r.status + ":" + std::to_string(r.placement.allocations.size());
  }
  auto rows = s.list("reservations");
  EXPECT_TRUE(rows.isOk());
  for (const auto& [k, v] : *rows) out += k + "=" + v;
  return out;
}

// The state store wrapper whose commits fail on demand (persistence failure injection).
class FlakyStore : public store::StateStore {
 public:
  explicit FlakyStore(store::StateStore& real) : real_(real) {}
  Status commit(const std::vector<store::StateWrite>& batch) override {
    if (fail) return unavailable("injected commit failure");
    return real_.commit(batch);
  }
  Result<std::optional<std::string>> get(const std::string& ns, const std::string& k) override {
    return real_.get(ns, k);
  }
  Result<std::vector<std::pair<std::string, std::string>>> list(const std::string& ns) override {
    return real_.list(ns);
  }
  std::string name() const override { return "flaky"; }
  bool fail = false;

 private:
  store::StateStore& real_;
};

// Every rejected submit/update, whichever check fails (before or after planning),
// leaves the plan, the list and the store exactly as they were.
TEST_F(ReservationManagerTest, EveryRejectedRequestLeavesNoState) {
  FlakyStore flaky(*store_);
  ReservationManagerOptions o;
  o.limits.max_reservations_per_user = 2;
  ReservationManager m(o, std::move(planner::Planner::create({}, Resource())).value(), flaky,
                       clock_, metrics_);
  m.onCapacity(Resource(10240, 10), true);
  ASSERT_TRUE(m.submit(ReservationId("keep"), def(2), 0, nullptr).isOk());
  const std::string before = observable(m, *store_, clock_.now());

  struct Case {
    std::string what;
    planner::ReservationDefinition d;
    StatusCode code;
    std::string field;
  };
  std::vector<Case> cases;
  auto d = def(2);
  d.user = UserId(std::string("al\xffice"));
  cases.push_back({"bad UTF-8 user", d, StatusCode::kInvalidArgument, "user:"});
  d = def(2);
  d.name = std::string("n\xc3\x28");
  cases.push_back({"bad UTF-8 name", d, StatusCode::kInvalidArgument, "name:"});
  d = def(2);
  d.recurrence_key = JobKey(std::string("\xed\xa0\x80"));  // a UTF-16 surrogate
  cases.push_back({"bad UTF-8 key", d, StatusCode::kInvalidArgument, "recurrence_key:"});
  d = def(2);
  d.queue = "nope";
  cases.push_back({"bad queue", d, StatusCode::kInvalidArgument, "queue:"});
  d = def(2);
  d.stages[0].duration = Millis(0);
  cases.push_back({"bad stage", d, StatusCode::kInvalidArgument, "stages[0].duration:"});
  cases.push_back({"infeasible", def(1000), StatusCode::kInfeasible, ""});
  d = def(2);
  d.stages[0].capability = Resource(INT64_MAX / 2, 1);
  d.stages[0].num_containers = 4;
  cases.push_back({"overflow", d, StatusCode::kInvalidArgument, "stages[0].num_containers:"});
  d = def(2);
  d.stages[0].num_containers = INT32_MAX;
  cases.push_back(
      {"2^31-1 containers", d, StatusCode::kInvalidArgument, "stages[0].num_containers:"});
  d = def(2);
  d.name = std::string(300, 'x');
  cases.push_back({"long name", d, StatusCode::kInvalidArgument, "name:"});
  d = def(2);
  d.stages.assign(10001, d.stages[0]);
  cases.push_back({"too many stages", d, StatusCode::kInvalidArgument, "stages:"});
  d = def(2);
  d.priority = 5000;
  cases.push_back({"priority out of range", d, StatusCode::kInvalidArgument, "priority:"});

  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    auto r = m.submit(ReservationId("n" + std::to_string(i)), c.d, 0, nullptr);
    ASSERT_FALSE(r.isOk()) << c.what;
    EXPECT_EQ(r.status().code(), c.code) << c.what << ": " << r.status().toString();
    EXPECT_EQ(r.status().message().rfind(c.field, 0), 0u) << c.what << ": " << r.status().message();
    EXPECT_EQ(observable(m, *store_, clock_.now()), before) << "submit left state: " << c.what;
    auto u = m.update(ReservationId("keep"), UserId("alice"), c.d, 0, nullptr);
    ASSERT_FALSE(u.isOk()) << "update " << c.what;
    EXPECT_EQ(observable(m, *store_, clock_.now()), before) << "update left state: " << c.what;
  }
  // A failure after planning: the state store refuses the commit.
  flaky.fail = true;
  EXPECT_EQ(m.submit(ReservationId("late"), def(2), 0, nullptr).status().code(),
            StatusCode::kUnavailable);
  EXPECT_EQ(m.update(ReservationId("keep"), UserId("alice"), def(3), 0, nullptr).status().code(),
            StatusCode::kUnavailable);
  EXPECT_EQ(observable(m, *store_, clock_.now()), before) << "persistence failure left state";
  flaky.fail = false;
  // Quota: alice may hold two; the third is refused and leaves nothing.
  ASSERT_TRUE(m.submit(ReservationId("second"), def(1), 0, nullptr).isOk());
  const std::string two = observable(m, *store_, clock_.now());
  auto third = m.submit(ReservationId("third"), def(1), 0, nullptr);
  EXPECT_EQ(third.status().code(), StatusCode::kPermissionDenied) << third.status().toString();
  EXPECT_NE(third.status().message().find("rm.max-reservations-per-user"), std::string::npos);
  EXPECT_EQ(observable(m, *store_, clock_.now()), two);
}

// Periodic reservations have strict priority at admission (Morpheus §6).
class DisplacementTest : public ReservationManagerTest {
 protected:
  // One gang of n containers for 10 min inside [from, from + window).
  planner::ReservationDefinition gang(int n, TimePoint from, Millis window, Millis period) {
    auto d = def(n, period);
    d.arrival = from;
    d.deadline = from + window;
    d.stages = {{Resource(1024, 1), n, n, Millis(600000)}};
    return d;
  }
  TimePoint start() const { return clock_.now() + Millis(3600000); }
};

// A one-off displaced by a new periodic reservation is re-planned elsewhere in
// its window, stays active, and its new placement is persisted with the admission.
TEST_F(DisplacementTest, DisplacedOneOffIsReplacedAndPersisted) {
  ASSERT_TRUE(
      mgr_->submit(ReservationId("flex"), gang(10, start(), Millis(3600000), Millis(0)), 0, nullptr)
          .isOk());
  const auto before = *mgr_->get(ReservationId("flex"));
  TimePoint at = before.placement.allocations.front().start;
  auto daily = mgr_->submit(ReservationId("daily"), gang(10, at, Millis(600000), Millis(86400000)),
                            0, nullptr);
  ASSERT_TRUE(daily.isOk()) << daily.status().toString();
  auto after = *mgr_->get(ReservationId("flex"));
  EXPECT_EQ(after.status, "active");
  EXPECT_NE(after.placement, before.placement);
  EXPECT_GE(after.placement.allocations.front().start, start());
  EXPECT_LE(after.placement.allocations.back().end, start() + Millis(3600000));
  for (TimePoint t = start(); t < start() + Millis(3600000); t += Millis(60000)) {
    EXPECT_TRUE(mgr_->plan(t, t + Millis(60000)).steps[0].one_off.fitsIn(Resource(10240, 10)));
    auto snap = mgr_->plan(t, t + Millis(60000));
    EXPECT_TRUE((snap.steps[0].periodic + snap.steps[0].one_off).fitsIn(Resource(10240, 10)));
  }
  auto again = make();
  ASSERT_TRUE(again->recover().isOk());
  EXPECT_EQ(again->get(ReservationId("flex"))->placement, after.placement);
}

// A displaced one-off that fits nowhere keeps its placement, becomes "at-risk" with a reason
// naming the periodic reservation (persisted, listed); removing the periodic one backs it again.
TEST_F(DisplacementTest, DisplacedOneOffThatFitsNowhereIsAtRiskNamingThePeriodic) {
  ASSERT_TRUE(
      mgr_->submit(ReservationId("fixed"), gang(10, start(), Millis(600000), Millis(0)), 0, nullptr)
          .isOk());
  const auto before = *mgr_->get(ReservationId("fixed"));
  auto daily = mgr_->submit(ReservationId("daily"),
                            gang(10, start(), Millis(600000), Millis(86400000)), 0, nullptr);
  ASSERT_TRUE(daily.isOk()) << daily.status().toString();
  auto r = *mgr_->get(ReservationId("fixed"));
  EXPECT_EQ(r.status, "at-risk");
  EXPECT_NE(r.status_reason.find("displaced by periodic reservation daily"), std::string::npos)
      << r.status_reason;
  EXPECT_EQ(r.placement, before.placement);
  auto listed = mgr_->list("", "fixed", TimePoint(), TimePoint());
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].status, "at-risk");
  auto stored = *store_->get("reservations", "fixed");
  ASSERT_TRUE(stored.has_value());
  EXPECT_NE(stored->find("displaced by periodic reservation daily"), std::string::npos);
  ASSERT_TRUE(mgr_->remove(ReservationId("daily"), UserId("alice")).isOk());
  r = *mgr_->get(ReservationId("fixed"));
  EXPECT_EQ(r.status, "active");
  EXPECT_EQ(r.placement, before.placement);
}

// A periodic admission that cannot be persisted leaves the displaced one-offs as they were.
TEST_F(DisplacementTest, UnpersistedPeriodicAdmissionChangesNothing) {
  FlakyStore flaky(*store_);
  ReservationManager m({}, std::move(planner::Planner::create({}, Resource())).value(), flaky,
                       clock_, metrics_);
  m.onCapacity(Resource(10240, 10), true);
  ASSERT_TRUE(
      m.submit(ReservationId("fixed"), gang(10, start(), Millis(600000), Millis(0)), 0, nullptr)
          .isOk());
  ASSERT_TRUE(
      m.submit(ReservationId("flex"), gang(10, start(), Millis(3600000), Millis(0)), 0, nullptr)
          .isOk());
  const std::string before = observable(m, *store_, clock_.now());
  flaky.fail = true;
  auto daily = m.submit(ReservationId("daily"),
                        gang(10, start(), Millis(3600000), Millis(86400000)), 0, nullptr);
  EXPECT_EQ(daily.status().code(), StatusCode::kUnavailable) << daily.status().toString();
  EXPECT_EQ(observable(m, *store_, clock_.now()), before);
  flaky.fail = false;
  ASSERT_TRUE(m.submit(ReservationId("daily"), gang(10, start(), Millis(3600000), Millis(86400000)),
                       0, nullptr)
                  .isOk());
  EXPECT_NE(observable(m, *store_, clock_.now()), before);
}

// DRA grants are swaps charged to the per-instance budget (the unexpired part
// of a replaced grant is refunded) and refused once the budget is spent.
TEST_F(ReservationManagerTest, ReprovisionBudget) {
  auto d = def(2, Millis(86400000));
  d.arrival = clock_.now() + Millis(60000);
  d.deadline = clock_.now() + Millis(3600000);
  ASSERT_TRUE(mgr_->submit(ReservationId("r1"), d, 2 * 60000, nullptr).isOk());
  clock_.advance(Millis(120000));
  const ReservationId r1("r1");
  auto g = mgr_->reprovision(r1, "morpheus-dra", 1, Millis(60000), "t");
  ASSERT_TRUE(g.isOk()) << g.status().toString();
  EXPECT_EQ(g->granted, 1);
  // Replaced at once: the first grant is refunded, the budget use stays 60000.
  g = mgr_->reprovision(r1, "morpheus-dra", 1, Millis(60000), "t");
  EXPECT_EQ(g->granted, 1);
  EXPECT_EQ(mgr_->get(r1)->budget_used_container_ms, 60000);
  clock_.advance(Millis(60000));
  g = mgr_->reprovision(r1, "morpheus-dra", 1, Millis(60000), "t");
  EXPECT_EQ(g->granted, 1);
  clock_.advance(Millis(60000));
  g = mgr_->reprovision(r1, "morpheus-dra", 1, Millis(60000), "t");
  EXPECT_EQ(g->granted, 0);
  EXPECT_EQ(g->denial, "budget");
  // Renewals of the same grant are one history entry spanning them.
  auto rec = mgr_->get(r1);
  ASSERT_EQ(rec->history.size(), 2u);
  EXPECT_TRUE(rec->history[0].granted);
  EXPECT_EQ(rec->history[0].extra, Resource(1024, 1));
  EXPECT_EQ(rec->history[0].duration, Millis(120000));
  EXPECT_FALSE(rec->history[1].granted);
  EXPECT_NE(rec->history[1].reason.find("budget"), std::string::npos);
  // The history and the budget use survive a restart.
  auto again = make();
  ASSERT_TRUE(again->recover().isOk());
  EXPECT_EQ(again->get(r1)->history.size(), 2u);
  EXPECT_EQ(again->get(r1)->budget_used_container_ms, 120000);
}

}  // namespace
}  // namespace morpheus::rm

#include "common/auth.h"
#include "rm/core/access.h"
#include "rm/core/node_registry.h"
#include "rm/grpc/reservation_service.h"

namespace morpheus::rm {
namespace {

// The gRPC edge names the wire field (definition.stages[0].duration_ms), not the
// planner's internal one (stages[0].duration).
TEST_F(ReservationManagerTest, GrpcErrorsNameWireFields) {
  // No server, so no token metadata: authentication off, the caller is an admin.
  Authenticator auth({}, /*open=*/true);
  RmAccess access(auth, {}, QueueAcls());
  ReservationServiceImpl svc(*mgr_, access);
  v1::SubmitReservationRequest req;
  req.set_reservation_id("r1");
  req.set_user("alice");
  auto* d = req.mutable_definition();
  d->set_arrival_ms(toEpochMs(clock_.now()) + 3600000);
  d->set_deadline_ms(toEpochMs(clock_.now()) + 7200000);
  auto* st = d->add_stages();
  st->mutable_capability()->set_memory_mib(1024);
  st->mutable_capability()->set_vcores(1);
  st->set_num_containers(2);
  st->set_duration_ms(0);
  grpc::ServerContext ctx;
  v1::SubmitReservationResponse resp;
  grpc::Status s = svc.SubmitReservation(&ctx, &req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message().rfind("definition.stages[0].duration_ms:", 0), 0u)
      << s.error_message();
  st->set_duration_ms(600000);
  d->set_priority(1001);
  s = svc.SubmitReservation(&ctx, &req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message().rfind("definition.priority:", 0), 0u) << s.error_message();
}

// Absurd node resources are refused at registration naming the field; ids with
// '|', '/' or '..' are refused; the capacity is unchanged by a refused registration.
TEST(NodeRegistryTest, RefusesAbsurdResourcesAndBadIds) {
  NodeRegistry reg(Millis(10000));
  TimePoint now = fromEpochMs(1000);
  auto node = [](const std::string& id, Resource r) {
    NodeInfo n;
    n.id = NodeId(id);
    n.container_manager_address = "127.0.0.1:1";
    n.total = r;
    return n;
  };
  ASSERT_TRUE(reg.registerNode(node("nm1", Resource(4096, 4)), now).isOk());
  Status st = reg.registerNode(node("nm2", Resource(INT64_MAX, 4)), now);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message().rfind("total.memory_mib:", 0), 0u) << st.message();
  st = reg.registerNode(node("nm2", Resource(4096, kMaxNodeVcores + 1)), now);
  EXPECT_EQ(st.message().rfind("total.vcores:", 0), 0u) << st.message();
  Resource ext(4096, 4);
  ext.setExtended("gpu", INT64_MAX);
  EXPECT_EQ(reg.registerNode(node("nm2", ext), now).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(
      reg.registerNode(node("nm2", Resource(kMaxNodeMemoryMib, kMaxNodeVcores)), now).isOk());
  for (std::string bad : {"a|b", "../etc", "a/b", "x..y", ""}) {
    st = reg.registerNode(node(bad, Resource(4096, 4)), now);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(st.message().rfind("node_id:", 0), 0u) << st.message();
  }
  EXPECT_EQ(reg.liveCapacity(), Resource(4096 + kMaxNodeMemoryMib, 4 + kMaxNodeVcores));
  EXPECT_EQ(reg.liveCount(), 2);
  // Reported usage is bounded the same way (it is summed over nodes).
  EXPECT_EQ(reg.heartbeat(NodeId("nm1"), 1, Resource(INT64_MAX, 1), 0, 0, 0, now).code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(reg.heartbeat(NodeId("nm1"), 1, Resource(1024, 1), 0, 0, 0, now).isOk());
}

}  // namespace
}  // namespace morpheus::rm

namespace morpheus::rm {
namespace {

// Per-instance one-off reservations are accepted ahead of their
// instances: an app with the recurrence key binds to the reservation of the
// current or next instance, not to the latest accepted one; once every window
// has passed, to the latest accepted.
TEST_F(ReservationManagerTest, RecurrenceKeyBindsToTheCurrentInstancesReservation) {
  auto first = def(2), second = def(2);
  first.recurrence_key = second.recurrence_key = JobKey("seven");
  second.arrival = first.arrival + Millis(7 * 3600000);
  second.deadline = first.deadline + Millis(7 * 3600000);
  ASSERT_TRUE(mgr_->submit(ReservationId("i1"), first, 0, nullptr).isOk());
  clock_.advance(Millis(1000));
  ASSERT_TRUE(mgr_->submit(ReservationId("i2"), second, 0, nullptr).isOk());
  EXPECT_EQ(mgr_->byRecurrenceKey(JobKey("seven")), ReservationId("i1"));
  clock_.advance(first.deadline - clock_.now());  // the first window ends
  EXPECT_EQ(mgr_->byRecurrenceKey(JobKey("seven")), ReservationId("i2"));
  clock_.advance(second.deadline - clock_.now() + Millis(1));
  EXPECT_EQ(mgr_->byRecurrenceKey(JobKey("seven")), ReservationId("i2"));
  EXPECT_FALSE(mgr_->byRecurrenceKey(JobKey("other")).has_value());
}

}  // namespace
}  // namespace morpheus::rm
