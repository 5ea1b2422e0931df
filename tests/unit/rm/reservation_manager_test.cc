// ReservationManager over a real SQLite store with the virtual clock:
// persistence and recovery, queue/ACL checks, capacity grace, DRA budget.
#include <gtest/gtest.h>

#include "rm/reservation_manager.h"

#include "test_db.h"

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
// dropped.
TEST_F(ReservationManagerTest, CapacityGraceThenDrop) {
  ASSERT_TRUE(mgr_->submit(ReservationId("r1"), def(8), 0, nullptr).isOk());
  mgr_->onCapacity(Resource(), false);
  EXPECT_TRUE(mgr_->get(ReservationId("r1")).has_value()) << "no drop while nodes re-register";
  mgr_->onCapacity(Resource(1024, 1), true);
  auto r = mgr_->get(ReservationId("r1"));
  if (r) {
    // Re-planned onto the smaller cluster: it must fit.
    for (const auto& a : r->placement.allocations) EXPECT_LE(a.resource.vcores(), 1);
  } else {
    EXPECT_TRUE((*store_->list("reservations")).empty());
  }
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
