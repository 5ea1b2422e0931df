// ReservationManager's planning lane: requests are planned on a snapshot of
// the plan without the manager's lock, installed only when the plan did not
// change meanwhile, and bounded in work per request and in requests per user
// and in total. Real SQLite store, virtual clock; the big requests really run
// LowCost for a while, and the tests wait for the planning gauge, not for time.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "rm/core/reservation_manager.h"
#include "../test_db.h"

namespace morpheus::rm {
namespace {

using namespace std::chrono_literals;

class ReservationPlanningTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = freshTestDb("rplan");
    store_ = std::move(store::openStateStore("sqlite", path_)).value();
  }
  std::unique_ptr<ReservationManager> make(const ReservationLimits& limits) {
    ReservationManagerOptions o;
    o.limits = limits;
    auto m = std::make_unique<ReservationManager>(
        o, std::move(planner::Planner::create({}, Resource())).value(), *store_, clock_, metrics_);
    m->onCapacity(Resource(1024 * 64, 64), true);
    return m;
  }
  // A one-off of `stages` one-container stages (1 GiB, 1 vcore, 1 min each),
  // any order (R_ALL), over [now + 1 h, now + 1 h + window).
  planner::ReservationDefinition stages(const std::string& user, int n, Millis window) {
    planner::ReservationDefinition d;
    d.user = UserId(user);
    d.queue = "default";
    d.arrival = clock_.now() + Millis(3600000);
    d.deadline = d.arrival + window;
    d.interpreter = planner::Interpreter::kAll;
    d.stages.assign(static_cast<size_t>(n), {Resource(1024, 1), 1, 1, Millis(60000)});
    return d;
  }
  // Over (almost) the whole 7-day horizon, like the attack's 10,000 stages
  // over 6.9 days.
  planner::ReservationDefinition huge(const std::string& user, int n = 1500) {
    return stages(user, n, Millis(6 * 86400000LL + 20 * 3600000LL));
  }
  static ReservationLimits unbounded() {
    ReservationLimits l;
    l.max_planning_work = 1000000000000;
    return l;
  }
  double running() const { return metrics_.valueOf("morpheus_rm_planning_running"); }
  // Polls until a request is planning on its snapshot.
  bool waitPlanning() {
    auto until = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < until) {
      if (running() == 1) return true;
      std::this_thread::sleep_for(2ms);
    }
    return false;
  }

  VirtualClock clock_{fromEpochMs(1800000000000)};
  MetricsRegistry metrics_;
  std::string path_;
  std::unique_ptr<store::StateStore> store_;
};

// While a huge request plans, every call the scheduling strand and the RM's
// other threads make (guarantee, kind, capacity, expiry, list, plan) answers;
// the request is still planning after they all did, and is admitted after.
TEST_F(ReservationPlanningTest, PlanningDoesNotHoldTheManagersLock) {
  auto m = make(unbounded());
  ASSERT_TRUE(
      m->submit(ReservationId("small"), stages("bob", 2, Millis(1800000)), 0, nullptr).isOk());
  const TimePoint t = clock_.now() + Millis(3600000);
  auto big = std::async(std::launch::async,
                        [&] { return m->submit(ReservationId("big"), huge("alice"), 0, nullptr); });
  ASSERT_TRUE(waitPlanning());
  (void)m->guaranteedAt(ReservationId("small"), t);
  (void)m->isPeriodic(ReservationId("small"));
  m->onCapacity(Resource(1024 * 64, 64), true);
  m->expire();
  EXPECT_EQ(m->list("", "", TimePoint(), TimePoint()).size(), 1u);
  (void)m->plan(t, t + Millis(3600000));
  EXPECT_EQ(big.wait_for(0s), std::future_status::timeout)
      << "the calls above waited for the planning to finish";
  auto r = big.get();
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(m->list("", "", TimePoint(), TimePoint()).size(), 2u);
  EXPECT_EQ(running(), 0);
}

// A change of the plan while a request plans (here: a deletion) discards the
// snapshot's plan: the request is planned again on the current plan, and the
// deleted reservation stays deleted (a stale snapshot installed would bring it
// back into the plan without a record).
TEST_F(ReservationPlanningTest, PlanChangedWhilePlanningIsReplannedAndLosesNothing) {
  auto m = make(unbounded());
  auto k = stages("bob", 1, Millis(1800000));
  k.stages[0].num_containers = 8;
  ASSERT_TRUE(m->submit(ReservationId("keep"), k, 0, nullptr).isOk());
  const TimePoint busy = m->get(ReservationId("keep"))->placement.allocations.front().start;
  ASSERT_GT(m->guaranteedAt(ReservationId("keep"), busy).vcores(), 0);
  const double conflicts_before = metrics_.valueOf("morpheus_rm_planning_conflicts_total");
  auto big = std::async(std::launch::async,
                        [&] { return m->submit(ReservationId("big"), huge("alice"), 0, nullptr); });
  ASSERT_TRUE(waitPlanning());
  ASSERT_TRUE(m->remove(ReservationId("keep"), UserId("bob")).isOk());
  auto r = big.get();
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_GE(metrics_.valueOf("morpheus_rm_planning_conflicts_total"),
            std::max(conflicts_before, 0.0) + 1);
  EXPECT_FALSE(m->get(ReservationId("keep")).has_value());
  EXPECT_EQ(m->guaranteedAt(ReservationId("keep"), busy), Resource());
  // The plan holds exactly "big": its load equals its own placement at every allocation.
  for (const auto& a : r->placement.allocations) {
    EXPECT_EQ(m->plan(a.start, a.start + Millis(60000)).steps.at(0).one_off, a.resource);
  }
  // And the store agrees: a recovered manager has "big" alone.
  auto again = make(unbounded());
  ASSERT_TRUE(again->recover().isOk());
  EXPECT_EQ(again->ids(), std::vector<ReservationId>{ReservationId("big")});
}

// rm.max-planning-work: stages x window steps beyond it are refused before
// planning, naming the field and the option; nothing is stored.
TEST_F(ReservationPlanningTest, WorkBeyondTheCapIsRefusedNamingTheOption) {
  ReservationLimits l;
  l.max_planning_work = 3000;
  auto m = make(l);
  // 100 stages x 30 steps = 3000: at the cap.
  EXPECT_TRUE(
      m->submit(ReservationId("at-cap"), stages("alice", 100, Millis(1800000)), 0, nullptr).isOk());
  auto over = m->submit(ReservationId("over"), stages("alice", 101, Millis(1800000)), 0, nullptr);
  ASSERT_FALSE(over.isOk());
  EXPECT_EQ(over.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(over.status().message().rfind("stages: 101 stages x 30 plan steps", 0), 0u)
      << over.status().message();
  EXPECT_NE(over.status().message().find("rm.max-planning-work = 3000"), std::string::npos)
      << over.status().message();
  // A longer window counts too (10 stages x 301 steps), for update as for submit.
  auto longer = m->update(ReservationId("at-cap"), UserId("alice"),
                          stages("alice", 10, Millis(301 * 60000)), 0, nullptr);
  EXPECT_EQ(longer.status().code(), StatusCode::kInvalidArgument) << longer.status().toString();
  EXPECT_NE(longer.status().message().find("rm.max-planning-work"), std::string::npos);
  EXPECT_EQ(m->ids(), std::vector<ReservationId>{ReservationId("at-cap")});
  EXPECT_EQ(m->get(ReservationId("at-cap"))->def.stages.size(), 100u);
  // The default refuses the attack's request outright.
  auto d = make(ReservationLimits{});
  auto attack = d->submit(ReservationId("attack"), huge("alice", 10000), 0, nullptr);
  EXPECT_EQ(attack.status().code(), StatusCode::kInvalidArgument) << attack.status().toString();
  EXPECT_NE(attack.status().message().find("rm.max-planning-work"), std::string::npos);
}

// rm.max-planning-requests-per-user and rm.max-planning-requests: while one
// request plans, the same user's next one and (total 1) anyone's are refused
// UNAVAILABLE naming the option, leaving nothing; once it answered, both pass.
TEST_F(ReservationPlanningTest, RequestsBeyondTheLaneBoundsAreRefusedNamingTheOption) {
  ReservationLimits l = unbounded();
  l.max_planning_per_user = 1;
  l.max_planning_total = 1;
  auto m = make(l);
  auto big = std::async(std::launch::async,
                        [&] { return m->submit(ReservationId("big"), huge("alice"), 0, nullptr); });
  ASSERT_TRUE(waitPlanning());
  auto mine = m->submit(ReservationId("mine"), stages("alice", 1, Millis(1800000)), 0, nullptr);
  auto theirs = m->submit(ReservationId("theirs"), stages("bob", 1, Millis(1800000)), 0, nullptr);
  EXPECT_EQ(big.wait_for(0s), std::future_status::timeout) << "refusals must not wait";
  EXPECT_EQ(mine.status().code(), StatusCode::kUnavailable) << mine.status().toString();
  EXPECT_NE(mine.status().message().find("rm.max-planning-requests-per-user"), std::string::npos)
      << mine.status().message();
  EXPECT_EQ(theirs.status().code(), StatusCode::kUnavailable) << theirs.status().toString();
  EXPECT_NE(theirs.status().message().find("rm.max-planning-requests allows"), std::string::npos)
      << theirs.status().message();
  EXPECT_GE(metrics_.valueOf("morpheus_rm_planning_refused_total", {{"reason", "per-user"}}), 1);
  ASSERT_TRUE(big.get().isOk());
  EXPECT_EQ(metrics_.valueOf("morpheus_rm_planning_requests"), 0);
  EXPECT_TRUE(
      m->submit(ReservationId("mine"), stages("alice", 1, Millis(1800000)), 0, nullptr).isOk());
  EXPECT_TRUE(
      m->submit(ReservationId("theirs"), stages("bob", 1, Millis(1800000)), 0, nullptr).isOk());
  EXPECT_EQ(m->ids().size(), 3u);
}

}  // namespace
}  // namespace morpheus::rm
