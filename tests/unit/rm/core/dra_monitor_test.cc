// DraMonitor (Morpheus §7) with the real ReservationManager and
// planner over SQLite and the virtual clock. The runtime's demand is given by
// the test (a plain function, the monitor's only input besides the plan);
// passes are driven by calling tick().
#include "rm/core/dra_monitor.h"

#include <gtest/gtest.h>

#include "../test_db.h"

namespace morpheus::rm {
namespace {

constexpr int64_t kMinute = 60000;

class DraMonitorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = freshTestDb("dra");
    store_ = std::move(store::openStateStore("sqlite", path_)).value();
    mgr_ = std::make_unique<ReservationManager>(
        ReservationManagerOptions{}, std::move(planner::Planner::create({}, Resource())).value(),
        *store_, clock_, metrics_);
    mgr_->onCapacity(Resource(10 * 1024, 10), true);
    arrival_ = clock_.now() + Millis(kMinute);
  }
  // A daily reservation of `n` containers over the whole 30-minute window.
  void reserve(const std::string& id, int n, int64_t budget) {
    planner::ReservationDefinition d;
    d.user = UserId("alice");
    d.queue = "default";
    d.arrival = arrival_;
    d.deadline = arrival_ + Millis(30 * kMinute);
    d.period = Millis(1440 * kMinute);
    d.stages = {{Resource(1024, 1), n, 1, Millis(30 * kMinute)}};
    auto r = mgr_->submit(ReservationId(id), d, budget, nullptr);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
  }
  std::unique_ptr<DraMonitor> monitor(const std::string& policy = "morpheus-dra",
                                      reprovision::JockeyOptions jockey = {}) {
    DraOptions o;
    o.interval = Millis(kMinute);
    auto p = std::move(reprovision::makePolicy(policy, o.dra, jockey, "dra.policy")).value();
    return std::make_unique<DraMonitor>(
        o, std::move(p), *mgr_, [this] { return demand_; }, clock_, metrics_);
  }
  void demand(const std::string& id, int used, int pending,
              std::vector<reprovision::StageState> stages = {}) {
    ReservationDemand d;
    d.apps = {AppId("app_1")};
    d.used = Resource(1024, 1) * used;
    d.pending = Resource(1024, 1) * pending;
    d.stages = std::move(stages);
    demand_[ReservationId(id)] = d;
  }
  Resource guaranteed(const std::string& id) {
    return mgr_->guaranteedAt(ReservationId(id), clock_.now());
  }
  double counter(const std::string& name, const Labels& labels = {}) {
    return metrics_.valueOf(name, labels);
  }

  VirtualClock clock_{fromEpochMs(1800000000000)};  // a whole minute
  MetricsRegistry metrics_;
  std::string path_;
  std::unique_ptr<store::StateStore> store_;
  std::unique_ptr<ReservationManager> mgr_;
  std::map<ReservationId, ReservationDemand> demand_;
  TimePoint arrival_;
};

// Demand above the skyline gets min(demand - skyline, rho * recent max) extra
// for T, through the plan; the grant lapses after T unless renewed.
TEST_F(DraMonitorTest, GrantsTheRhoCappedExcessForT) {
  reserve("r", 2, 100 * kMinute);
  auto m = monitor();
  clock_.advance(Millis(2 * kMinute));  // one minute into the instance
  demand("r", 2, 10);
  m->tick();
  EXPECT_EQ(guaranteed("r"), Resource(1024, 1) * 6) << "2 planned + min(10, 2 * 2)";
  auto rec = mgr_->get(ReservationId("r"));
  ASSERT_EQ(rec->history.size(), 1u);
  EXPECT_TRUE(rec->history[0].granted);
  EXPECT_EQ(rec->history[0].extra, Resource(1024, 1) * 4);
  EXPECT_EQ(rec->history[0].duration, Millis(kMinute));
  EXPECT_EQ(rec->budget_used_container_ms, 4 * kMinute);
  EXPECT_EQ(counter("morpheus_rm_dra_grants_total"), 1);
  EXPECT_EQ(counter("morpheus_rm_dra_extra_container_seconds_total"), 4 * kMinute / 1000.0);
  clock_.advance(Millis(kMinute + 1000));
  EXPECT_EQ(guaranteed("r"), Resource(1024, 1) * 2) << "lapsed after T";
}

// Morpheus §7: DRA reacts to jobs falling behind. A job that ran ahead of
// its plan on borrowed capacity (5 in use against 2 guaranteed) gets no grant
// however much it asks; once its usage summed over the instance's reviews is
// back within what was guaranteed, it does.
TEST_F(DraMonitorTest, NoGrantToAJobAheadOfItsPlan) {
  reserve("r", 2, 100 * kMinute);
  auto m = monitor();
  clock_.advance(Millis(2 * kMinute));
  demand("r", 5, 10);
  m->tick();  // used 5, guaranteed 2: ahead by 3 container-minutes
  EXPECT_EQ(guaranteed("r"), Resource(1024, 1) * 2);
  EXPECT_TRUE(mgr_->get(ReservationId("r"))->history.empty());
  demand("r", 0, 10);  // its borrowed containers were taken back
  clock_.advance(Millis(kMinute));
  m->tick();  // used 5, guaranteed 4: still ahead
  EXPECT_EQ(guaranteed("r"), Resource(1024, 1) * 2);
  clock_.advance(Millis(kMinute));
  m->tick();  // used 5, guaranteed 6: behind
  EXPECT_EQ(guaranteed("r"), Resource(1024, 1) * 6) << "2 planned + min(10, 2 * 2)";
}

// Never more than the job asks for; nothing when demand is within the plan.
TEST_F(DraMonitorTest, NeverAboveDemand) {
  reserve("r", 2, 100 * kMinute);
  auto m = monitor();
  clock_.advance(Millis(2 * kMinute));
  demand("r", 2, 0);
  m->tick();
  EXPECT_TRUE(mgr_->get(ReservationId("r"))->history.empty());
  demand("r", 2, 1);
  m->tick();
  EXPECT_EQ(guaranteed("r"), Resource(1024, 1) * 3);
}

// Only where the plan has room: a partial grant, then a denial, each counted
// and recorded with the step that limited it.
TEST_F(DraMonitorTest, PlanRoomBoundsTheGrant) {
  reserve("r", 2, 100 * kMinute);
  reserve("other", 7, 0);
  auto m = monitor();
  clock_.advance(Millis(2 * kMinute));
  demand("r", 2, 10);
  m->tick();
  EXPECT_EQ(guaranteed("r"), Resource(1024, 1) * 3) << "only 1 of 10 is free";
  EXPECT_EQ(counter("morpheus_rm_dra_denials_total", {{"reason", "plan-full"}}), 1);
  auto rec = mgr_->get(ReservationId("r"));
  ASSERT_EQ(rec->history.size(), 1u);
  EXPECT_TRUE(rec->history[0].granted);
  EXPECT_NE(rec->history[0].reason.find("plan room"), std::string::npos) << rec->history[0].reason;
  // Another job takes the last container at the next step: nothing fits.
  clock_.advance(Millis(kMinute));
  demand("other", 7, 5);
  demand("r", 2, 10);
  m->tick();
  rec = mgr_->get(ReservationId("r"));
  EXPECT_EQ(guaranteed("r") + guaranteed("other"), Resource(1024, 1) * 10);
  EXPECT_LE(counter("morpheus_rm_dra_denials_total", {{"reason", "plan-full"}}), 3);
  EXPECT_EQ(counter("morpheus_rm_dra_denials_total", {{"reason", "budget"}}), 1)
      << "'other' has no budget";
}

// The owner's budget bounds the extras; once spent the denial is recorded
// once per instance, and the next instance starts with a fresh budget.
TEST_F(DraMonitorTest, BudgetExhaustionIsDeniedOncePerInstance) {
  reserve("r", 2, 6 * kMinute);
  auto m = monitor();
  clock_.advance(Millis(2 * kMinute));
  demand("r", 2, 10);
  m->tick();  // 4 for a minute
  clock_.advance(Millis(kMinute));
  m->tick();  // 2 left for a minute
  EXPECT_EQ(guaranteed("r"), Resource(1024, 1) * 4);
  clock_.advance(Millis(kMinute));
  m->tick();
  m->tick();
  EXPECT_EQ(guaranteed("r"), Resource(1024, 1) * 2);
  auto rec = mgr_->get(ReservationId("r"));
  ASSERT_EQ(rec->history.size(), 3u);
  EXPECT_FALSE(rec->history[2].granted);
  EXPECT_NE(rec->history[2].reason.find("budget"), std::string::npos);
  EXPECT_EQ(counter("morpheus_rm_dra_denials_total", {{"reason", "budget"}}), 1);
  EXPECT_EQ(rec->budget_used_container_ms, 6 * kMinute);
  clock_.advance(Millis(1440 * kMinute));  // the next day's instance
  m->tick();
  EXPECT_EQ(guaranteed("r"), Resource(1024, 1) * 6);
}

// When no bound app runs any more, the grant ends at once and the unused
// part goes back to the budget.
TEST_F(DraMonitorTest, GrantIsReleasedWhenTheAppsFinish) {
  reserve("r", 2, 100 * kMinute);
  auto m = monitor();
  clock_.advance(Millis(2 * kMinute));
  demand("r", 2, 10);
  m->tick();
  EXPECT_EQ(guaranteed("r"), Resource(1024, 1) * 6);
  clock_.advance(Millis(kMinute / 2));
  demand_.clear();
  m->tick();
  EXPECT_EQ(guaranteed("r"), Resource(1024, 1) * 2);
  EXPECT_EQ(mgr_->get(ReservationId("r"))->budget_used_container_ms, 2 * kMinute);
}

// Jockey through the monitor: 20 map tasks of 5 min at the instance start,
// 30 min to the deadline, slack 0.1: 2 containers take 50 min, 3 take 35 min
// (38.5 with slack), 4 take 25 min (27.5): the plan of 2 grows to 4.
TEST_F(DraMonitorTest, JockeyAsksForWhatFinishesInTime) {
  reserve("r", 2, 1000 * kMinute);
  reprovision::JockeyOptions jo;
  jo.slack = 0.1;
  jo.dead_zone = Millis(0);
  jo.hysteresis = 1;
  auto m = monitor("jockey", jo);
  clock_.advance(Millis(kMinute));  // the instance starts
  demand("r", 2, 18, {{"map", {}, 20, 0, {}, Millis(5 * kMinute)}});
  m->tick();
  EXPECT_EQ(guaranteed("r"), Resource(1024, 1) * 4);
  auto rec = mgr_->get(ReservationId("r"));
  ASSERT_FALSE(rec->history.empty());
  EXPECT_EQ(rec->history.back().policy, "jockey");
  EXPECT_NE(rec->history.back().reason.find("4 task containers"), std::string::npos)
      << rec->history.back().reason;
}

// Records the previous allocation it is given; asks for one more each time
// until told to stop.
class RecordingPolicy final : public reprovision::ReprovisionPolicy {
 public:
  RecordingPolicy(std::vector<int64_t>* seen, bool* stop) : seen_(seen), stop_(stop) {}
  std::string name() const override { return "recording"; }
  std::optional<reprovision::ReprovisionDecision> decide(
      const reprovision::ReprovisionInput& in) const override {
    seen_->push_back(in.previous_allocation);
    if (*stop_) return std::nullopt;
    return reprovision::ReprovisionDecision{1, Millis(kMinute), "test", in.skyline_now + 10};
  }

 private:
  std::vector<int64_t>* seen_;
  bool* stop_;
};

// The monitor keeps the policy's chosen allocation between reviews (Jockey's
// hysteresis state) and forgets it when the policy asks for nothing.
TEST_F(DraMonitorTest, FeedsTheChosenAllocationBackToThePolicy) {
  reserve("r", 2, 1000 * kMinute);
  std::vector<int64_t> seen;
  bool stop = false;
  DraOptions o;
  DraMonitor m(
      o, std::make_unique<RecordingPolicy>(&seen, &stop), *mgr_, [this] { return demand_; }, clock_,
      metrics_);
  clock_.advance(Millis(2 * kMinute));
  demand("r", 2, 5);
  m.tick();
  m.tick();
  stop = true;
  m.tick();
  m.tick();
  // A review without a decision asks once more without the budget (to tell a
  // budget denial), with the same input.
  EXPECT_EQ(seen, (std::vector<int64_t>{0, 12, 12, 12, 0, 0}));
}

}  // namespace
}  // namespace morpheus::rm
