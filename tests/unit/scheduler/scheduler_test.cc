// Scheduler core (docs/design/scheduler.md): order of guarantees, fairness, lending and
// preemption with virtual time, gangs, constraints, accounting.
#include "scheduler/scheduler.h"
#include "scheduler/floor_div.h"
#include "scheduler/key_frontier.h"
#include "scheduler/shape_lists.h"

#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace morpheus::sched {
namespace {

const TimePoint kT0 = fromEpochMs(1'800'000'000'000);

std::unique_ptr<Scheduler> make(SchedulerOptions o = {}) {
  auto s = Scheduler::create(std::move(o));
  EXPECT_TRUE(s.isOk()) << s.status().toString();
  return std::move(s).value();
}

ResourceRequest ask(int32_t count, Resource cap = Resource(1024, 1), int32_t priority = 1,
                    std::string id = "", int32_t gang = 0) {
  ResourceRequest r;
  r.request_id = std::move(id);
  r.priority = priority;
  r.capability = cap;
  r.count = count;
  r.gang_size = gang;
  return r;
}

std::map<std::string, int> countByApp(const std::vector<Allocation>& as) {
  std::map<std::string, int> m;
  for (const auto& a : as) m[a.app.value()]++;
  return m;
}

NodeUpdateResult beat(Scheduler& s, const std::string& node, TimePoint t) {
  auto r = s.nodeUpdate(NodeId(node), t);
  EXPECT_TRUE(r.isOk()) << r.status().toString();
  return std::move(r).value();
}

// A reservation below its guarantee is served before ad-hoc work; ad-hoc work
// is served before the reservation's demand beyond its guarantee.
TEST(SchedulerTest, ReservationGetsGuaranteeBeforeAdhoc) {
  auto s = make();
  ASSERT_TRUE(s->addNode(NodeId("n1"), Resource(65536, 8), {}).isOk());
  ASSERT_TRUE(
      s->setReservation(ReservationId("r1"), ReservationKind::kPeriodic, Resource(4096, 4)).isOk());
  ASSERT_TRUE(s->addApp(AppId("adhoc"), UserId("u"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(
      s->addApp(AppId("res"), UserId("u"), QueueRef::reservation(ReservationId("r1"))).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("adhoc"), {ask(8)}).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("res"), {ask(8)}).isOk());
  auto r = beat(*s, "n1", kT0);
  auto m = countByApp(r.allocations);
  EXPECT_EQ(m["res"], 4);
  EXPECT_EQ(m["adhoc"], 4);
  ASSERT_EQ(r.allocations.size(), 8u);
  EXPECT_EQ(r.allocations[0].app, AppId("res"));  // guarantee first
  EXPECT_EQ(r.allocations[0].reservation, ReservationId("r1"));
  EXPECT_TRUE(r.allocations[7].reservation.empty());
  EXPECT_EQ(s->queueUsed(QueueRef::reservation(ReservationId("r1"))).value(), Resource(4096, 4));
}

// With no ad-hoc demand, a reservation borrows beyond its guarantee (work conserving).
TEST(SchedulerTest, ReservationBorrowsBeyondGuaranteeWhenIdle) {
  auto s = make();
  ASSERT_TRUE(s->addNode(NodeId("n1"), Resource(65536, 8), {}).isOk());
  ASSERT_TRUE(
      s->setReservation(ReservationId("r1"), ReservationKind::kOneOff, Resource(2048, 2)).isOk());
  ASSERT_TRUE(
      s->addApp(AppId("res"), UserId("u"), QueueRef::reservation(ReservationId("r1"))).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("res"), {ask(6)}).isOk());
  EXPECT_EQ(beat(*s, "n1", kT0).allocations.size(), 6u);
}

// Periodic reservations are served before one-off ones, whatever their creation order.
TEST(SchedulerTest, OneOffAfterPeriodic) {
  auto s = make();
  ASSERT_TRUE(s->addNode(NodeId("n1"), Resource(65536, 4), {}).isOk());
  ASSERT_TRUE(
      s->setReservation(ReservationId("once"), ReservationKind::kOneOff, Resource(4096, 4)).isOk());
  ASSERT_TRUE(
      s->setReservation(ReservationId("daily"), ReservationKind::kPeriodic, Resource(4096, 4))
          .isOk());
  ASSERT_TRUE(
      s->addApp(AppId("a_once"), UserId("u"), QueueRef::reservation(ReservationId("once"))).isOk());
  ASSERT_TRUE(
      s->addApp(AppId("a_daily"), UserId("u"), QueueRef::reservation(ReservationId("daily")))
          .isOk());
  ASSERT_TRUE(s->updateAsks(AppId("a_once"), {ask(4)}).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("a_daily"), {ask(4)}).isOk());
  auto m = countByApp(beat(*s, "n1", kT0).allocations);
  EXPECT_EQ(m["a_daily"], 4);
  EXPECT_EQ(m["a_once"], 0);
}

// Ad-hoc siblings split capacity in proportion to their weights, at every level.
TEST(SchedulerTest, AdhocWeightsSplitCapacityProportionally) {
  SchedulerOptions o;
  o.adhoc_queues = {{"root.a", 3}, {"root.b", 1}};
  auto s = make(o);
  for (int i = 0; i < 4; i++)
    ASSERT_TRUE(s->addNode(NodeId("n" + std::to_string(i)), Resource(1 << 20, 4), {}).isOk());
  ASSERT_TRUE(s->addApp(AppId("a"), UserId("u"), QueueRef::adhoc("root.a")).isOk());
  ASSERT_TRUE(s->addApp(AppId("b"), UserId("u"), QueueRef::adhoc("root.b")).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("a"), {ask(100)}).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("b"), {ask(100)}).isOk());
  auto m = countByApp(s->schedulePass(kT0).allocations);
  EXPECT_EQ(m["a"], 12);
  EXPECT_EQ(m["b"], 4);

  // Hierarchy: root.p (weight 1) = root.p.x + root.p.y (equal), root.q (weight 1).
  SchedulerOptions h;
  h.adhoc_queues = {{"root.p.x", 1}, {"root.p.y", 1}, {"root.q", 1}};
  auto t = make(h);
  for (int i = 0; i < 4; i++)
    ASSERT_TRUE(t->addNode(NodeId("n" + std::to_string(i)), Resource(1 << 20, 4), {}).isOk());
  for (const char* q : {"root.p.x", "root.p.y", "root.q"}) {
    ASSERT_TRUE(t->addApp(AppId(q), UserId("u"), QueueRef::adhoc(q)).isOk());
    ASSERT_TRUE(t->updateAsks(AppId(q), {ask(100)}).isOk());
  }
  auto hm = countByApp(t->schedulePass(kT0).allocations);
  EXPECT_EQ(hm["root.q"], 8);
  EXPECT_EQ(hm["root.p.x"], 4);
  EXPECT_EQ(hm["root.p.y"], 4);
  EXPECT_EQ(t->queueUsed(QueueRef::adhoc("root.p")).value().vcores(), 8);
}

// DRF between users of one leaf (the example of Ghodsi et al.: <9 CPU, 18 GB>,
// user A tasks <1 CPU, 4 GB>, user B tasks <3 CPU, 1 GB> -> A 3 tasks, B 2).
TEST(SchedulerTest, DrfBetweenTwoUsers) {
  auto s = make();
  ASSERT_TRUE(s->addNode(NodeId("n1"), Resource(18 * 1024, 9), {}).isOk());
  ASSERT_TRUE(s->addApp(AppId("appA"), UserId("alice"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(s->addApp(AppId("appB"), UserId("bob"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("appA"), {ask(100, Resource(4096, 1))}).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("appB"), {ask(100, Resource(1024, 3))}).isOk());
  auto m = countByApp(beat(*s, "n1", kT0).allocations);
  EXPECT_EQ(m["appA"], 3);
  EXPECT_EQ(m["appB"], 2);
  EXPECT_EQ(s->userUsed("root.default", UserId("alice")).value(), Resource(12288, 3));
  EXPECT_EQ(s->userUsed("root.default", UserId("bob")).value(), Resource(2048, 6));
}

// AskChooser::kDecline in a leaf without cross-app packing: DRF between
// apps, but an ask with a request id starting "later" is declined in its
// app's turn. One node of 4 slots; a (created first) asks 4 "later", b
// asks 3. Without the decline DRF alternates a, b, a, b (2 / 2); with it
// b takes its 3 first and a's declined ask the slot left, so the decline
// defers a's ask and leaves no room unused.
class DeclineLater final : public QueueOrderingPolicy, public AskChooser {
 public:
  std::string_view name() const override { return "decline-later"; }
  double score(const Resource& used, double weight, const Resource& cluster) const override {
    return used.dominantShare(cluster) / weight;
  }
  double askScore(const AskInput& in) const override {
    return in.request_id.rfind("later", 0) == 0 ? kDecline : 0.0;
  }
};

TEST(SchedulerTest, DeclinedAskIsTakenAfterTheLeafsOtherApps) {
  SchedulerOptions o;
  o.adhoc_queues.push_back({"root.default", 1.0, std::make_shared<DeclineLater>()});
  auto s = make(std::move(o));
  ASSERT_TRUE(s->addNode(NodeId("n1"), Resource(4096, 4), {}).isOk());
  ASSERT_TRUE(s->addApp(AppId("a"), UserId("u1"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(s->addApp(AppId("b"), UserId("u2"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("a"), {ask(4, Resource(1024, 1), 1, "later")}).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("b"), {ask(3, Resource(1024, 1), 1, "now")}).isOk());
  auto r = beat(*s, "n1", kT0);
  std::vector<std::string> order;
  for (const auto& a : r.allocations) order.push_back(a.app.value());
  EXPECT_EQ(order, (std::vector<std::string>{"b", "b", "b", "a"}));
}

// Unused reserved capacity is lent; when the reservation needs it, the newest
// borrowed containers get a notice, are returned to kill after the grace
// period (virtual time), and once freed the reservation gets them on the next
// heartbeat even though ad-hoc work still asks.
TEST(SchedulerTest, LendingPreemptionNoticeAndKillAfterGrace) {
  auto s = make();  // default grace 15 s
  ASSERT_TRUE(s->addNode(NodeId("n1"), Resource(65536, 8), {}).isOk());
  ASSERT_TRUE(
      s->setReservation(ReservationId("r1"), ReservationKind::kPeriodic, Resource(4096, 4)).isOk());
  ASSERT_TRUE(
      s->addApp(AppId("res"), UserId("u"), QueueRef::reservation(ReservationId("r1"))).isOk());
  ASSERT_TRUE(s->addApp(AppId("adhoc"), UserId("v"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("adhoc"), {ask(8)}).isOk());
  auto fill = beat(*s, "n1", kT0);
  ASSERT_EQ(fill.allocations.size(), 8u);  // lent: the reservation asks nothing yet
  EXPECT_TRUE(s->takePreemptionNotices(AppId("adhoc")).empty());

  ASSERT_TRUE(s->updateAsks(AppId("res"), {ask(4)}).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("adhoc"), {ask(4)}).isOk());
  TimePoint t1 = kT0 + Seconds(1);
  auto r1 = beat(*s, "n1", t1);
  EXPECT_TRUE(r1.allocations.empty());
  auto notices = s->takePreemptionNotices(AppId("adhoc"));
  ASSERT_EQ(notices.size(), 4u);
  for (size_t i = 0; i < 4; i++) {
    EXPECT_EQ(notices[i].container, fill.allocations[7 - i].container);  // newest first
    EXPECT_EQ(notices[i].deadline, t1 + Seconds(15));
    EXPECT_EQ(notices[i].node, NodeId("n1"));
  }
  // No duplicate selection while the notices are pending.
  EXPECT_TRUE(beat(*s, "n1", t1 + Seconds(1)).to_kill.empty());
  EXPECT_TRUE(s->takePreemptionNotices(AppId("adhoc")).empty());
  EXPECT_TRUE(beat(*s, "n1", t1 + Seconds(14)).to_kill.empty());
  auto kill = beat(*s, "n1", t1 + Seconds(15));
  ASSERT_EQ(kill.to_kill.size(), 4u);
  EXPECT_TRUE(beat(*s, "n1", t1 + Seconds(16)).to_kill.empty());  // returned once
  for (const auto& k : kill.to_kill) ASSERT_TRUE(s->containerCompleted(k.container).isOk());
  auto after = beat(*s, "n1", t1 + Seconds(16));
  auto m = countByApp(after.allocations);
  EXPECT_EQ(m["res"], 4);
  EXPECT_EQ(m["adhoc"], 0);
  EXPECT_EQ(s->queueUsed(QueueRef::reservation(ReservationId("r1"))).value(), Resource(4096, 4));
}

// With a preemption interval the check runs at a heartbeat only once the
// interval has passed since the last one that ran it: a need that grows
// within the interval gets its notices at the first heartbeat after it, not
// at the next one (rm.preemption-interval, as YARN's monitoring interval).
TEST(SchedulerTest, PreemptionCheckRunsOncePerInterval) {
  SchedulerOptions o;
  o.preemption_interval = Millis(-1);
  EXPECT_NE(Scheduler::create(o).status().message().find("preemption_interval"), std::string::npos);
  o.preemption_interval = Seconds(3);
  auto s = make(o);
  ASSERT_TRUE(s->addNode(NodeId("n1"), Resource(65536, 8), {}).isOk());
  ASSERT_TRUE(
      s->setReservation(ReservationId("r1"), ReservationKind::kPeriodic, Resource(4096, 4)).isOk());
  ASSERT_TRUE(
      s->addApp(AppId("res"), UserId("u"), QueueRef::reservation(ReservationId("r1"))).isOk());
  ASSERT_TRUE(s->addApp(AppId("adhoc"), UserId("v"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("adhoc"), {ask(8)}).isOk());
  ASSERT_EQ(beat(*s, "n1", kT0).allocations.size(), 8u);
  // No reservation starved at kT0, so that heartbeat did not start an
  // interval: the first starvation is checked at once.
  ASSERT_TRUE(s->updateAsks(AppId("res"), {ask(2)}).isOk());
  beat(*s, "n1", kT0 + Seconds(1));
  EXPECT_EQ(s->takePreemptionNotices(AppId("adhoc")).size(), 2u);
  ASSERT_TRUE(s->updateAsks(AppId("res"), {ask(4)}).isOk());
  beat(*s, "n1", kT0 + Seconds(2));
  beat(*s, "n1", kT0 + Millis(3999));
  EXPECT_TRUE(s->takePreemptionNotices(AppId("adhoc")).empty());
  beat(*s, "n1", kT0 + Seconds(4));
  EXPECT_EQ(s->takePreemptionNotices(AppId("adhoc")).size(), 2u);
}

// 8 ad-hoc containers fill n1 (8 vcores); reservation r1
// (guarantee 4 containers) then asks `res_ask`, and the newest ad-hoc
// containers get notices at kT0 + 1 s, deadline kT0 + 16 s. `notices`
// nullptr: the AM has not taken them yet.
std::unique_ptr<Scheduler> lentAndNoticed(int32_t res_ask, std::vector<Allocation>* fill,
                                          std::vector<PreemptionNotice>* notices) {
  auto s = make();
  EXPECT_TRUE(s->addNode(NodeId("n1"), Resource(65536, 8), {}).isOk());
  EXPECT_TRUE(
      s->setReservation(ReservationId("r1"), ReservationKind::kPeriodic, Resource(4096, 4)).isOk());
  EXPECT_TRUE(
      s->addApp(AppId("res"), UserId("u"), QueueRef::reservation(ReservationId("r1"))).isOk());
  EXPECT_TRUE(s->addApp(AppId("adhoc"), UserId("v"), QueueRef::adhoc("root.default")).isOk());
  EXPECT_TRUE(s->updateAsks(AppId("adhoc"), {ask(8)}).isOk());
  *fill = beat(*s, "n1", kT0).allocations;
  EXPECT_EQ(fill->size(), 8u);
  EXPECT_TRUE(s->updateAsks(AppId("res"), {ask(res_ask)}).isOk());
  EXPECT_TRUE(beat(*s, "n1", kT0 + Seconds(1)).allocations.empty());
  if (notices != nullptr) *notices = s->takePreemptionNotices(AppId("adhoc"));
  return s;
}

// A notice whose need is gone by its deadline (the reservation's
// app finished) is withdrawn: the container is not killed, keeps running, and
// is a candidate again — newest first, as if it had never been noticed.
TEST(SchedulerTest, NoticeWithdrawnWhenTheReservationsAppFinishes) {
  std::vector<Allocation> fill;
  std::vector<PreemptionNotice> notices;
  auto s = lentAndNoticed(4, &fill, &notices);
  ASSERT_EQ(notices.size(), 4u);
  ASSERT_TRUE(s->removeApp(AppId("res")).isOk());
  EXPECT_TRUE(beat(*s, "n1", kT0 + Seconds(16)).to_kill.empty());
  EXPECT_TRUE(beat(*s, "n1", kT0 + Seconds(40)).to_kill.empty());
  EXPECT_EQ(s->appUsed(AppId("adhoc")).value(), Resource(8192, 8));
  EXPECT_TRUE(s->takePreemptionNotices(AppId("adhoc")).empty());
  // Candidates again: a new need notices the same newest containers.
  ASSERT_TRUE(
      s->addApp(AppId("res2"), UserId("u"), QueueRef::reservation(ReservationId("r1"))).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("res2"), {ask(2)}).isOk());
  beat(*s, "n1", kT0 + Seconds(41));
  auto again = s->takePreemptionNotices(AppId("adhoc"));
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again[0].container, fill[7].container);
  EXPECT_EQ(again[1].container, fill[6].container);
  EXPECT_EQ(again[0].deadline, kT0 + Seconds(56));
  auto kill = beat(*s, "n1", kT0 + Seconds(56));
  ASSERT_EQ(kill.to_kill.size(), 2u);
}

// The ask is cancelled before the AM even took the notices: they
// are dropped with the withdrawal.
TEST(SchedulerTest, NoticeWithdrawnWhenTheAskIsCancelled) {
  std::vector<Allocation> fill;
  auto s = lentAndNoticed(3, &fill, nullptr);
  ASSERT_TRUE(s->updateAsks(AppId("res"), {ask(0)}).isOk());
  EXPECT_TRUE(beat(*s, "n1", kT0 + Seconds(16)).to_kill.empty());
  EXPECT_TRUE(s->takePreemptionNotices(AppId("adhoc")).empty());
  EXPECT_EQ(s->appUsed(AppId("adhoc")).value(), Resource(8192, 8));
}

// A noticed container ends before the AM took its notice: the notice is
// dropped (numUntakenNotices counts it no more), and a container granted
// next, in the freed container slot, carries none; the other notice is
// handed out whole (id, node, deadline).
TEST(SchedulerTest, NoticeOfAnEndedContainerIsDroppedBeforeItIsTaken) {
  std::vector<Allocation> fill;
  auto s = lentAndNoticed(2, &fill, nullptr);
  ASSERT_EQ(s->numUntakenNotices(), 2);
  ASSERT_TRUE(s->containerCompleted(fill[7].container).isOk());
  EXPECT_EQ(s->numUntakenNotices(), 1);
  EXPECT_EQ(countByApp(beat(*s, "n1", kT0 + Seconds(2)).allocations)["res"], 1);
  auto notices = s->takePreemptionNotices(AppId("adhoc"));
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices[0].container, fill[6].container);
  EXPECT_EQ(notices[0].app, AppId("adhoc"));
  EXPECT_EQ(notices[0].node, NodeId("n1"));
  EXPECT_EQ(notices[0].deadline, kT0 + Seconds(16));
  EXPECT_EQ(s->numUntakenNotices(), 0);
  EXPECT_TRUE(s->takePreemptionNotices(AppId("res")).empty());
}

// Two containers noticed, the need shrinks to one before the
// deadline: exactly one is killed, the newest (the node's older one is
// checked first and spared), and the spared one is a candidate again.
TEST(SchedulerTest, NeedShrinksToOneOfTwoNoticesKillsTheNewest) {
  std::vector<Allocation> fill;
  std::vector<PreemptionNotice> notices;
  auto s = lentAndNoticed(2, &fill, &notices);
  ASSERT_EQ(notices.size(), 2u);
  ASSERT_TRUE(s->updateAsks(AppId("res"), {ask(1)}).isOk());
  auto kill = beat(*s, "n1", kT0 + Seconds(16));
  ASSERT_EQ(kill.to_kill.size(), 1u);
  EXPECT_EQ(kill.to_kill[0].container, fill[7].container);
  ASSERT_TRUE(s->containerCompleted(kill.to_kill[0].container).isOk());
  EXPECT_EQ(countByApp(beat(*s, "n1", kT0 + Seconds(17)).allocations)["res"], 1);
  EXPECT_TRUE(s->takePreemptionNotices(AppId("adhoc")).empty());
  ASSERT_TRUE(s->updateAsks(AppId("res"), {ask(1)}).isOk());
  beat(*s, "n1", kT0 + Seconds(18));
  auto again = s->takePreemptionNotices(AppId("adhoc"));
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].container, fill[6].container);
}

// The victim's own reservation is back within its guarantee at
// the deadline (its guarantee rose): its containers are no longer borrowed,
// the notices are withdrawn.
TEST(SchedulerTest, NoticeWithdrawnWhenTheVictimsReservationIsWithinItsGuarantee) {
  auto s = make();
  ASSERT_TRUE(s->addNode(NodeId("n1"), Resource(65536, 8), {}).isOk());
  ASSERT_TRUE(
      s->setReservation(ReservationId("big"), ReservationKind::kOneOff, Resource(2048, 2)).isOk());
  ASSERT_TRUE(
      s->addApp(AppId("b"), UserId("u"), QueueRef::reservation(ReservationId("big"))).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("b"), {ask(8)}).isOk());
  ASSERT_EQ(beat(*s, "n1", kT0).allocations.size(), 8u);
  ASSERT_TRUE(
      s->setReservation(ReservationId("p"), ReservationKind::kPeriodic, Resource(2048, 2)).isOk());
  ASSERT_TRUE(
      s->addApp(AppId("pa"), UserId("u"), QueueRef::reservation(ReservationId("p"))).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("pa"), {ask(2)}).isOk());
  beat(*s, "n1", kT0 + Seconds(1));
  ASSERT_EQ(s->takePreemptionNotices(AppId("b")).size(), 2u);
  ASSERT_TRUE(
      s->setReservation(ReservationId("big"), ReservationKind::kOneOff, Resource(8192, 8)).isOk());
  EXPECT_TRUE(beat(*s, "n1", kT0 + Seconds(16)).to_kill.empty());
  EXPECT_EQ(s->appUsed(AppId("b")).value(), Resource(8192, 8));
}

// The kill re-check with starved shapes of two sizes. 16 ad-hoc containers
// of (1024, 1) fill n1, then n2; r1 then starves for one (2048, 2) and r2
// for one (1024, 1), and n2's three newest containers (c14, c15, c16) get
// notices. When one container of n1 has ended by the deadline, c14's room is
// not needed: without it, n1 takes r2's container and n2 (c15 and c16) r1's,
// so its notice is withdrawn, and then c15 and c16 are both needed. The
// rooms without c14 hold one (2048, 2) for the two starved containers, so a
// count in the largest starved shape would call them short and kill c14;
// the count that may skip the walk is in the smallest shape (three).
// Without that ended container, all three are killed. `fill`: the ad-hoc
// containers, n1's first.
std::unique_ptr<Scheduler> twoShapesStarved(std::vector<Allocation>* fill) {
  auto s = make();
  EXPECT_TRUE(s->addNode(NodeId("n1"), Resource(8192, 8), {}).isOk());
  EXPECT_TRUE(s->addNode(NodeId("n2"), Resource(8192, 8), {}).isOk());
  EXPECT_TRUE(s->addApp(AppId("adhoc"), UserId("v"), QueueRef::adhoc("root.default")).isOk());
  EXPECT_TRUE(s->updateAsks(AppId("adhoc"), {ask(16)}).isOk());
  *fill = beat(*s, "n1", kT0).allocations;
  for (const auto& a : beat(*s, "n2", kT0).allocations) fill->push_back(a);
  EXPECT_EQ(fill->size(), 16u);
  for (const std::string r : {"r1", "r2"}) {
    const Resource g = r == "r1" ? Resource(2048, 2) : Resource(1024, 1);
    EXPECT_TRUE(s->setReservation(ReservationId(r), ReservationKind::kPeriodic, g).isOk());
    EXPECT_TRUE(
        s->addApp(AppId(r + "a"), UserId("u"), QueueRef::reservation(ReservationId(r))).isOk());
    EXPECT_TRUE(s->updateAsks(AppId(r + "a"), {ask(1, g)}).isOk());
  }
  EXPECT_TRUE(beat(*s, "n1", kT0 + Seconds(1)).allocations.empty());
  std::vector<ContainerId> noticed;
  for (const auto& n : s->takePreemptionNotices(AppId("adhoc"))) noticed.push_back(n.container);
  std::sort(noticed.begin(), noticed.end());
  std::vector<ContainerId> newest;
  for (size_t i = 13; i < fill->size(); i++) newest.push_back((*fill)[i].container);
  std::sort(newest.begin(), newest.end());
  EXPECT_EQ(noticed, newest);
  return s;
}

TEST(SchedulerTest, KillRecheckCountsRoomInTheSmallestStarvedShape) {
  std::vector<Allocation> fill;
  auto s = twoShapesStarved(&fill);
  ASSERT_EQ(fill.size(), 16u);
  ASSERT_TRUE(s->containerCompleted(fill[0].container).isOk());
  std::vector<ContainerId> kills;
  for (const auto& k : beat(*s, "n2", kT0 + Seconds(16)).to_kill) kills.push_back(k.container);
  EXPECT_EQ(kills, (std::vector<ContainerId>{fill[14].container, fill[15].container}));

  auto short_of_room = twoShapesStarved(&fill);
  EXPECT_EQ(beat(*short_of_room, "n2", kT0 + Seconds(16)).to_kill.size(), 3u);
}

// Containers of a reservation within its guarantee are never preempted for
// another reservation; only its part beyond the guarantee is.
TEST(SchedulerTest, PreemptsOnlyBorrowedPartOfReservations) {
  auto s = make();
  ASSERT_TRUE(s->addNode(NodeId("n1"), Resource(65536, 8), {}).isOk());
  ASSERT_TRUE(
      s->setReservation(ReservationId("big"), ReservationKind::kOneOff, Resource(2048, 2)).isOk());
  ASSERT_TRUE(
      s->addApp(AppId("b"), UserId("u"), QueueRef::reservation(ReservationId("big"))).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("b"), {ask(8)}).isOk());
  ASSERT_EQ(beat(*s, "n1", kT0).allocations.size(), 8u);  // 2 guaranteed + 6 borrowed
  ASSERT_TRUE(
      s->setReservation(ReservationId("p"), ReservationKind::kPeriodic, Resource(8192, 8)).isOk());
  ASSERT_TRUE(
      s->addApp(AppId("pa"), UserId("u"), QueueRef::reservation(ReservationId("p"))).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("pa"), {ask(8)}).isOk());
  beat(*s, "n1", kT0 + Seconds(1));
  EXPECT_EQ(s->takePreemptionNotices(AppId("b")).size(), 6u);
}

// Reservation r1 (periodic, guarantee `shape`) with app "res" asking for one
// container of `shape`.
void starveOneContainer(Scheduler& s, const Resource& shape) {
  ASSERT_TRUE(s.setReservation(ReservationId("r1"), ReservationKind::kPeriodic, shape).isOk());
  ASSERT_TRUE(
      s.addApp(AppId("res"), UserId("u"), QueueRef::reservation(ReservationId("r1"))).isOk());
  ASSERT_TRUE(s.updateAsks(AppId("res"), {ask(1, shape)}).isOk());
}

// A heartbeat of `node` at `t` grants exactly one container, to "res".
void expectReservationServed(Scheduler& s, const std::string& node, TimePoint t) {
  auto after = beat(s, node, t);
  ASSERT_EQ(after.allocations.size(), 1u);
  EXPECT_EQ(after.allocations[0].app, AppId("res"));
}

// A recovered 1-vcore AM container `id` of app "adhoc" on n1.
Allocation adhocAm(const std::string& id) {
  Allocation am;
  am.container = ContainerId(id);
  am.app = AppId("adhoc");
  am.node = NodeId("n1");
  am.resource = Resource(1024, 1);
  am.am = true;
  return am;
}

// Free room that no starved container fits is not room for it: two nodes
// each keep a 1-vcore fragment free (2 vcores free in all), and reservation
// r1 asks for one 2-vcore container. Preemption must make room on one node
// (the newest borrowed containers there), not wait for the fragments.
TEST(SchedulerTest, FragmentedFreeRoomDoesNotStarveAReservation) {
  auto s = make();
  ASSERT_TRUE(s->addNode(NodeId("n1"), Resource(8192, 8), {}).isOk());
  ASSERT_TRUE(s->addNode(NodeId("n2"), Resource(8192, 8), {}).isOk());
  ASSERT_TRUE(s->addApp(AppId("adhoc"), UserId("v"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("adhoc"), {ask(7)}).isOk());
  ASSERT_EQ(beat(*s, "n1", kT0).allocations.size(), 7u);
  ASSERT_TRUE(s->updateAsks(AppId("adhoc"), {ask(7)}).isOk());
  auto n2 = beat(*s, "n2", kT0).allocations;
  ASSERT_EQ(n2.size(), 7u);
  starveOneContainer(*s, Resource(2048, 2));
  beat(*s, "n1", kT0 + Seconds(1));
  beat(*s, "n2", kT0 + Seconds(1));
  auto notices = s->takePreemptionNotices(AppId("adhoc"));
  ASSERT_EQ(notices.size(), 1u);  // with n2's 1-vcore fragment, one container makes room
  EXPECT_EQ(notices[0].container, n2.back().container);
  auto kill = beat(*s, "n2", kT0 + Seconds(16));
  ASSERT_EQ(kill.to_kill.size(), 1u);
  ASSERT_TRUE(s->containerCompleted(kill.to_kill[0].container).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("adhoc"), {ask(4)}).isOk());
  expectReservationServed(*s, "n2", kT0 + Seconds(17));
}

// cover() remembers a walk that found room for every starved container
// (CoverMemo) and answers from it while nothing it read changed. Here the
// starved container fits n1's free room, so heartbeats of the full n2 notice
// nothing, for as long as n1 (before n2 in slot order) keeps that room; once
// n1's room shrinks (its total, as harvesting sets it) the same starved
// container has no room and the next heartbeat of n2 must take it from the
// borrowed containers there, not answer from the remembered walk.
TEST(SchedulerTest, CoverRemembersNoRoomChangeBeforeWhereItsWalkEnded) {
  auto s = make();
  ASSERT_TRUE(s->addNode(NodeId("n1"), Resource(8192, 8), {}).isOk());
  ASSERT_TRUE(s->addNode(NodeId("n2"), Resource(8192, 8), {}).isOk());
  ASSERT_TRUE(s->addApp(AppId("adhoc"), UserId("v"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("adhoc"), {ask(8)}).isOk());
  ASSERT_EQ(beat(*s, "n2", kT0).allocations.size(), 8u);
  ASSERT_TRUE(s->updateAsks(AppId("adhoc"), {}).isOk());
  starveOneContainer(*s, Resource(2048, 2));
  for (int i = 1; i <= 3; i++) {
    EXPECT_TRUE(beat(*s, "n2", kT0 + Seconds(i)).allocations.empty());
    EXPECT_TRUE(s->takePreemptionNotices(AppId("adhoc")).empty()) << "heartbeat " << i;
  }
  ASSERT_TRUE(s->setNodeTotal(NodeId("n1"), Resource(1024, 1)).isOk());
  beat(*s, "n2", kT0 + Seconds(4));
  auto notices = s->takePreemptionNotices(AppId("adhoc"));
  ASSERT_EQ(notices.size(), 2u);  // two 1-vcore containers make room for the 2-vcore one
  auto kill = beat(*s, "n2", kT0 + Seconds(20));
  ASSERT_EQ(kill.to_kill.size(), 2u);
  for (const auto& k : kill.to_kill) ASSERT_TRUE(s->containerCompleted(k.container).isOk());
  expectReservationServed(*s, "n2", kT0 + Seconds(21));
}

// Victims are chosen per node: the newest borrowed container sits on n1,
// whose other containers are AMs, so killing it cannot make room for the
// reservation's 2-vcore container and it is spared; the two newest on n2 are
// noticed instead, and the reservation gets n2's room.
TEST(SchedulerTest, PreemptsWhereTheStarvedContainerCanFit) {
  auto s = make();
  ASSERT_TRUE(s->addNode(NodeId("n1"), Resource(4096, 4), {}).isOk());
  ASSERT_TRUE(s->addNode(NodeId("n2"), Resource(4096, 4), {}).isOk());
  ASSERT_TRUE(s->addApp(AppId("adhoc"), UserId("v"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("adhoc"), {ask(4)}).isOk());
  auto n2 = beat(*s, "n2", kT0).allocations;
  ASSERT_EQ(n2.size(), 4u);
  for (int i = 0; i < 3; i++) {
    ASSERT_TRUE(s->recoverContainer(adhocAm("am" + std::to_string(i))).isOk());
  }
  ASSERT_TRUE(s->updateAsks(AppId("adhoc"), {ask(1)}).isOk());
  auto n1 = beat(*s, "n1", kT0).allocations;
  ASSERT_EQ(n1.size(), 1u);  // the newest container
  starveOneContainer(*s, Resource(2048, 2));
  beat(*s, "n1", kT0 + Seconds(1));
  auto notices = s->takePreemptionNotices(AppId("adhoc"));
  ASSERT_EQ(notices.size(), 2u);
  EXPECT_EQ(notices[0].container, n2[3].container);  // newest first
  EXPECT_EQ(notices[1].container, n2[2].container);
  auto kill = beat(*s, "n2", kT0 + Seconds(16));
  ASSERT_EQ(kill.to_kill.size(), 2u);
  for (const auto& k : kill.to_kill) ASSERT_TRUE(s->containerCompleted(k.container).isOk());
  expectReservationServed(*s, "n2", kT0 + Seconds(17));
}

// A node making room keeps it: the reservation's 8 GiB container needs both
// 4 GiB borrowed containers on n1 gone. While the second kill is pending, the
// room the first one freed is not given back to the ad-hoc app (before, it
// was, and that container became the next victim: at grace 0 a loop).
TEST(SchedulerTest, NodeMakingRoomKeepsItsFreeRoomForTheReservation) {
  auto s = make();
  ASSERT_TRUE(s->addNode(NodeId("n1"), Resource(8192, 8), {}).isOk());
  ASSERT_TRUE(s->addApp(AppId("adhoc"), UserId("v"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("adhoc"), {ask(2, Resource(4096, 1))}).isOk());
  ASSERT_EQ(beat(*s, "n1", kT0).allocations.size(), 2u);
  starveOneContainer(*s, Resource(8192, 1));
  beat(*s, "n1", kT0 + Seconds(1));
  ASSERT_EQ(s->takePreemptionNotices(AppId("adhoc")).size(), 2u);
  auto kill = beat(*s, "n1", kT0 + Seconds(16));
  ASSERT_EQ(kill.to_kill.size(), 2u);
  ASSERT_TRUE(s->containerCompleted(kill.to_kill[0].container).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("adhoc"), {ask(1, Resource(4096, 1))}).isOk());
  EXPECT_TRUE(beat(*s, "n1", kT0 + Seconds(17)).allocations.empty());
  ASSERT_TRUE(s->containerCompleted(kill.to_kill[1].container).isOk());
  expectReservationServed(*s, "n1", kT0 + Seconds(18));
}

// AM containers (handed in by the RM with am set) are never preemption
// victims, even when they are the newest borrowed containers.
TEST(SchedulerTest, AmContainersAreNeverPreempted) {
  auto s = make();
  ASSERT_TRUE(s->addNode(NodeId("n1"), Resource(4096, 4), {}).isOk());
  ASSERT_TRUE(s->addApp(AppId("adhoc"), UserId("v"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("adhoc"), {ask(3)}).isOk());
  auto fill = beat(*s, "n1", kT0);
  ASSERT_EQ(fill.allocations.size(), 3u);
  const Allocation am = adhocAm("adhoc_0_am1");
  ASSERT_TRUE(s->recoverContainer(am).isOk());  // the newest container, and the node is full
  ASSERT_TRUE(
      s->setReservation(ReservationId("r1"), ReservationKind::kPeriodic, Resource(4096, 4)).isOk());
  ASSERT_TRUE(
      s->addApp(AppId("res"), UserId("u"), QueueRef::reservation(ReservationId("r1"))).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("res"), {ask(4)}).isOk());
  beat(*s, "n1", kT0 + Seconds(1));
  auto notices = s->takePreemptionNotices(AppId("adhoc"));
  ASSERT_EQ(notices.size(), 3u);
  for (const auto& n : notices) EXPECT_NE(n.container, am.container);
  auto kill = beat(*s, "n1", kT0 + Seconds(20));
  ASSERT_EQ(kill.to_kill.size(), 3u);
  for (const auto& k : kill.to_kill) EXPECT_FALSE(k.am);
  auto removed = s->removeApp(AppId("adhoc"));
  ASSERT_TRUE(removed.isOk());
  ASSERT_EQ(removed->size(), 4u);
  EXPECT_TRUE(removed->back().am);
}

// Beyond its guarantee a reservation waits behind ad-hoc work by default;
// with borrowing_reservations_share it shares with the top-level ad-hoc
// queues by dominant share, as a sibling of weight 1.
TEST(SchedulerTest, BorrowingReservationsShareWithAdhocWhenConfigured) {
  for (bool share : {false, true}) {
    SchedulerOptions o;
    o.borrowing_reservations_share = share;
    auto s = make(o);
    ASSERT_TRUE(s->addNode(NodeId("n1"), Resource(8192, 8), {}).isOk());
    ASSERT_TRUE(
        s->setReservation(ReservationId("r1"), ReservationKind::kPeriodic, Resource(1024, 1))
            .isOk());
    ASSERT_TRUE(
        s->addApp(AppId("res"), UserId("u"), QueueRef::reservation(ReservationId("r1"))).isOk());
    ASSERT_TRUE(s->addApp(AppId("adhoc"), UserId("v"), QueueRef::adhoc("root.default")).isOk());
    ASSERT_TRUE(s->updateAsks(AppId("res"), {ask(8)}).isOk());
    ASSERT_TRUE(s->updateAsks(AppId("adhoc"), {ask(8)}).isOk());
    auto m = countByApp(beat(*s, "n1", kT0).allocations);
    if (share) {
      EXPECT_EQ(m["res"], 4);  // 1 guaranteed, then 3 : 4 by dominant share
      EXPECT_EQ(m["adhoc"], 4);
    } else {
      EXPECT_EQ(m["res"], 1);  // its guarantee only
      EXPECT_EQ(m["adhoc"], 7);
    }
  }
}

// Gang asks are granted all-or-none within a pass.
TEST(SchedulerTest, GangGrantedAllOrNone) {
  auto s = make();
  ASSERT_TRUE(s->addNode(NodeId("n1"), Resource(65536, 4), {}).isOk());
  ASSERT_TRUE(s->addApp(AppId("g"), UserId("u"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("g"), {ask(6, Resource(1024, 1), 1, "gang", 3)}).isOk());
  auto r = beat(*s, "n1", kT0);
  ASSERT_EQ(r.allocations.size(), 3u);  // the second gang of 3 does not fit the 1 vcore left
  for (const auto& a : r.allocations) EXPECT_EQ(a.request_id, "gang");
  EXPECT_EQ(s->appPending(AppId("g")).value(), 3);
  // A gang larger than the node never gets a partial grant.
  ASSERT_TRUE(s->addNode(NodeId("n2"), Resource(65536, 2), {}).isOk());
  EXPECT_TRUE(beat(*s, "n2", kT0).allocations.empty());
  // Once enough is free the whole gang comes at once.
  ASSERT_TRUE(s->release(AppId("g"), r.allocations[0].container).isOk());
  ASSERT_TRUE(s->release(AppId("g"), r.allocations[1].container).isOk());
  EXPECT_EQ(beat(*s, "n1", kT0).allocations.size(), 3u);
  EXPECT_EQ(s->appPending(AppId("g")).value(), 0);
}

// Hard constraints are never violated; soft ones are preferred until the ask
// has waited soft_constraint_delay.
TEST(SchedulerTest, HardAndSoftAttributeConstraints) {
  auto s = make();
  ASSERT_TRUE(s->addNode(NodeId("n1"), Resource(65536, 8), {{"rack", "a"}}).isOk());
  ASSERT_TRUE(s->addNode(NodeId("n2"), Resource(65536, 8), {{"rack", "b"}, {"gpu", "yes"}}).isOk());
  ASSERT_TRUE(s->addApp(AppId("hard"), UserId("u"), QueueRef::adhoc("root.default")).isOk());
  auto h = ask(2);
  h.constraints = {{"rack", {"b"}, true}};
  ASSERT_TRUE(s->updateAsks(AppId("hard"), {h}).isOk());
  for (int i = 0; i < 10; i++) EXPECT_TRUE(beat(*s, "n1", kT0 + Seconds(i)).allocations.empty());
  auto r2 = beat(*s, "n2", kT0);
  ASSERT_EQ(r2.allocations.size(), 2u);
  EXPECT_EQ(r2.allocations[0].node, NodeId("n2"));

  ASSERT_TRUE(s->addApp(AppId("soft"), UserId("u"), QueueRef::adhoc("root.default")).isOk());
  auto sf = ask(2);
  sf.constraints = {{"gpu", {}, false}};  // prefers nodes that have a gpu attribute
  ASSERT_TRUE(s->updateAsks(AppId("soft"), {sf}).isOk());
  EXPECT_TRUE(beat(*s, "n1", kT0 + Seconds(20)).allocations.empty());  // starts waiting
  EXPECT_TRUE(beat(*s, "n1", kT0 + Seconds(22)).allocations.empty());
  auto late = beat(*s, "n1", kT0 + Seconds(23));  // waited the 3 s delay
  EXPECT_EQ(late.allocations.size(), 2u);

  ASSERT_TRUE(s->addApp(AppId("soft2"), UserId("u"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("soft2"), {sf}).isOk());
  EXPECT_EQ(beat(*s, "n2", kT0 + Seconds(30)).allocations.size(), 2u);  // matching node at once
}

// Removing a node returns its containers as lost and shrinks the cluster.
TEST(SchedulerTest, NodeRemovalReturnsLostContainers) {
  auto s = make();
  ASSERT_TRUE(s->addNode(NodeId("n1"), Resource(8192, 4), {}).isOk());
  ASSERT_TRUE(s->addNode(NodeId("n2"), Resource(8192, 4), {}).isOk());
  ASSERT_TRUE(s->addApp(AppId("a"), UserId("u"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("a"), {ask(6)}).isOk());
  auto r1 = beat(*s, "n1", kT0);
  auto r2 = beat(*s, "n2", kT0);
  ASSERT_EQ(r1.allocations.size() + r2.allocations.size(), 6u);
  auto lost = s->removeNode(NodeId("n1"));
  ASSERT_TRUE(lost.isOk());
  ASSERT_EQ(lost->size(), r1.allocations.size());
  for (size_t i = 0; i < lost->size(); i++)
    EXPECT_EQ((*lost)[i].container, r1.allocations[i].container);
  EXPECT_EQ(s->clusterTotal(), Resource(8192, 4));
  EXPECT_EQ(s->appUsed(AppId("a")).value().vcores(), static_cast<int64_t>(r2.allocations.size()));
  EXPECT_EQ(s->numContainers(), r2.allocations.size());
  EXPECT_EQ(s->removeNode(NodeId("n1")).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s->nodeUpdate(NodeId("n1"), kT0).status().code(), StatusCode::kNotFound);
}

// Scale: a node's slot updates it as its id does; the slot of a
// removed node stays invalid even when a node of the same id joins again;
// nodeHasNotices follows the node's containers under notice until the kill.
TEST(SchedulerTest, NodeSlotsUpdateByHandleAndAreNeverReused) {
  std::vector<Allocation> fill;
  std::vector<PreemptionNotice> notices;
  auto s = lentAndNoticed(4, &fill, &notices);
  ASSERT_TRUE(s->addNode(NodeId("n2"), Resource(65536, 8), {}).isOk());
  auto n1 = s->nodeSlot(NodeId("n1"));
  auto n2 = s->nodeSlot(NodeId("n2"));
  ASSERT_TRUE(n1.isOk() && n2.isOk());
  EXPECT_NE(n1->value, n2->value);
  EXPECT_EQ(s->nodeSlot(NodeId("n9")).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(s->nodeHasNotices(*n1));  // 4 ad-hoc containers under notice on n1
  EXPECT_FALSE(s->nodeHasNotices(*n2));
  // The reservation's 4 containers go to the empty n2 through its slot.
  auto on_n2 = s->nodeUpdate(*n2, kT0 + Seconds(2));
  ASSERT_TRUE(on_n2.isOk());
  EXPECT_EQ(countByApp(on_n2->allocations)["res"], 4);
  for (const auto& a : on_n2->allocations) EXPECT_EQ(a.node, NodeId("n2"));
  // Served elsewhere, n1's notices are withdrawn at their deadline, not killed.
  auto at_deadline = s->nodeUpdate(*n1, kT0 + Seconds(16));
  ASSERT_TRUE(at_deadline.isOk());
  EXPECT_TRUE(at_deadline->to_kill.empty());
  EXPECT_FALSE(s->nodeHasNotices(*n1));
  ASSERT_TRUE(s->removeNode(NodeId("n2")).isOk());
  EXPECT_EQ(s->nodeUpdate(*n2, kT0).status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(s->nodeHasNotices(*n2));
  ASSERT_TRUE(s->addNode(NodeId("n2"), Resource(65536, 8), {}).isOk());
  EXPECT_EQ(s->nodeUpdate(*n2, kT0).status().code(), StatusCode::kNotFound);
  auto again = s->nodeSlot(NodeId("n2"));
  ASSERT_TRUE(again.isOk());
  EXPECT_NE(again->value, n2->value);
  EXPECT_EQ(s->nodeUpdate(NodeSlot{-1}, kT0).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s->nodeUpdate(NodeSlot{1000}, kT0).status().code(), StatusCode::kNotFound);
}

// A recovered container is accounted to its app, its reservation queue and its node.
TEST(SchedulerTest, RecoverContainerReaccounts) {
  auto s = make();
  ASSERT_TRUE(s->addNode(NodeId("n1"), Resource(8192, 8), {}).isOk());
  ASSERT_TRUE(
      s->setReservation(ReservationId("r1"), ReservationKind::kPeriodic, Resource(4096, 4)).isOk());
  ASSERT_TRUE(
      s->addApp(AppId("a"), UserId("u"), QueueRef::reservation(ReservationId("r1"))).isOk());
  Allocation c;
  c.container = ContainerId("a_17_3");
  c.app = AppId("a");
  c.node = NodeId("n1");
  c.resource = Resource(3072, 3);
  c.priority = 2;
  ASSERT_TRUE(s->recoverContainer(c).isOk());
  EXPECT_EQ(s->appUsed(AppId("a")).value(), Resource(3072, 3));
  EXPECT_EQ(s->nodeUsed(NodeId("n1")).value(), Resource(3072, 3));
  EXPECT_EQ(s->queueUsed(QueueRef::reservation(ReservationId("r1"))).value(), Resource(3072, 3));
  EXPECT_EQ(s->recoverContainer(c).code(), StatusCode::kAlreadyExists);
  Allocation bad = c;
  bad.container = ContainerId("x");
  bad.app = AppId("nope");
  EXPECT_EQ(s->recoverContainer(bad).code(), StatusCode::kNotFound);
  bad.app = AppId("a");
  bad.node = NodeId("nope");
  EXPECT_EQ(s->recoverContainer(bad).code(), StatusCode::kNotFound);
  bad.node = NodeId("n1");
  bad.resource = Resource();
  EXPECT_EQ(s->recoverContainer(bad).code(), StatusCode::kInvalidArgument);
  // The recovered container counts against the guarantee: one more fits within it.
  ASSERT_TRUE(s->addApp(AppId("other"), UserId("u"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("other"), {ask(10)}).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("a"), {ask(10)}).isOk());
  auto r = beat(*s, "n1", kT0);
  ASSERT_FALSE(r.allocations.empty());
  EXPECT_EQ(r.allocations[0].app, AppId("a"));
  EXPECT_EQ(r.allocations[1].app, AppId("other"));
  auto done = s->containerCompleted(ContainerId("a_17_3"));
  ASSERT_TRUE(done.isOk());
  EXPECT_EQ(done->reservation, ReservationId("r1"));
}

// One 4-vcore node, apps "a" and "b" of one user, and "a"'s first heartbeat:
// four 1-vcore containers of "a" (the node full).
void fourContainersOfA(Scheduler& s, NodeUpdateResult& r) {
  ASSERT_TRUE(s.addNode(NodeId("n1"), Resource(4096, 4), {}).isOk());
  ASSERT_TRUE(s.addApp(AppId("a"), UserId("u"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(s.addApp(AppId("b"), UserId("u"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(s.updateAsks(AppId("a"), {ask(10)}).isOk());
  r = beat(s, "n1", kT0);
  ASSERT_EQ(r.allocations.size(), 4u);
}

// Release and completion free capacity for the next heartbeat.
TEST(SchedulerTest, ReleaseAndCompleteFreeCapacity) {
  auto s = make();
  NodeUpdateResult r;
  ASSERT_NO_FATAL_FAILURE(fourContainersOfA(*s, r));
  EXPECT_TRUE(beat(*s, "n1", kT0).allocations.empty());
  EXPECT_EQ(s->release(AppId("b"), r.allocations[0].container).status().code(),
            StatusCode::kPermissionDenied);
  ASSERT_TRUE(s->release(AppId("a"), r.allocations[0].container).isOk());
  ASSERT_TRUE(s->containerCompleted(r.allocations[1].container).isOk());
  EXPECT_EQ(s->nodeUsed(NodeId("n1")).value(), Resource(2048, 2));
  EXPECT_EQ(s->containerCompleted(r.allocations[1].container).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(beat(*s, "n1", kT0).allocations.size(), 2u);
  EXPECT_EQ(s->clusterUsed(), Resource(4096, 4));
  auto gone = s->removeApp(AppId("a"));
  ASSERT_TRUE(gone.isOk());
  EXPECT_EQ(gone->size(), 4u);
  EXPECT_EQ(s->clusterUsed(), Resource());
}

// By slot: release and completion free the same capacity as by id; a slot
// whose container ended is NOT_FOUND, also once a new container reuses it
// (its generation differs), and the new container is untouched.
TEST(SchedulerTest, ReleaseAndCompleteBySlotMissStaleSlots) {
  auto s = make();
  NodeUpdateResult r;
  ASSERT_NO_FATAL_FAILURE(fourContainersOfA(*s, r));
  EXPECT_EQ(s->release(AppId("b"), r.allocations[0].slot).code(), StatusCode::kPermissionDenied);
  ASSERT_TRUE(s->release(AppId("a"), r.allocations[0].slot).isOk());
  ASSERT_TRUE(s->containerCompleted(r.allocations[1].slot).isOk());
  EXPECT_EQ(s->nodeUsed(NodeId("n1")).value(), Resource(2048, 2));
  EXPECT_EQ(s->numContainers(), 2u);
  EXPECT_EQ(s->containerCompleted(r.allocations[1].slot).code(), StatusCode::kNotFound);
  EXPECT_EQ(s->containerCompleted(r.allocations[1].container).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(s->containerCompleted(ContainerSlot{}).code(), StatusCode::kNotFound);
  EXPECT_EQ(s->containerCompleted(ContainerSlot{1000, 0}).code(), StatusCode::kNotFound);
  // The freed slots are reused by the next grants, with a new generation.
  auto again = beat(*s, "n1", kT0);
  ASSERT_EQ(again.allocations.size(), 2u);
  bool reused = false;
  for (const auto& n : again.allocations) {
    for (int i = 0; i < 2; i++) {
      const ContainerSlot old = r.allocations[static_cast<size_t>(i)].slot;
      if (n.slot.index != old.index) continue;
      reused = true;
      EXPECT_NE(n.slot.generation, old.generation);
    }
  }
  EXPECT_TRUE(reused);
  EXPECT_EQ(s->release(AppId("a"), r.allocations[0].slot).code(), StatusCode::kNotFound);
  EXPECT_EQ(s->containerCompleted(r.allocations[1].slot).code(), StatusCode::kNotFound);
  EXPECT_EQ(s->numContainers(), 4u);
  EXPECT_EQ(s->clusterUsed(), Resource(4096, 4));
  // By id, a container granted on a reused slot is found and freed.
  ASSERT_TRUE(s->containerCompleted(again.allocations[0].container).isOk());
  EXPECT_EQ(s->containerCompleted(again.allocations[0].slot).code(), StatusCode::kNotFound);
  ASSERT_TRUE(s->containerCompleted(again.allocations[1].slot).isOk());
  EXPECT_EQ(s->clusterUsed(), Resource(2048, 2));
}

// Without the id index (SchedulerOptions::index_container_ids off), slots
// work as with it and the calls by id are refused, changing nothing.
TEST(SchedulerTest, WithoutTheIdIndexContainersGoBySlotOnly) {
  SchedulerOptions o;
  o.index_container_ids = false;
  auto s = make(o);
  ASSERT_TRUE(s->addNode(NodeId("n1"), Resource(4096, 4), {}).isOk());
  ASSERT_TRUE(s->addApp(AppId("a"), UserId("u"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("a"), {ask(3)}).isOk());
  auto r = beat(*s, "n1", kT0);
  ASSERT_EQ(r.allocations.size(), 3u);
  EXPECT_EQ(s->numContainers(), 3u);
  EXPECT_EQ(s->containerCompleted(r.allocations[0].container).status().code(),
            StatusCode::kInfeasible);
  EXPECT_EQ(s->release(AppId("a"), r.allocations[0].container).status().code(),
            StatusCode::kInfeasible);
  EXPECT_EQ(s->recoverContainer(r.allocations[0]).code(), StatusCode::kInfeasible);
  EXPECT_EQ(s->numContainers(), 3u);
  ASSERT_TRUE(s->containerCompleted(r.allocations[0].slot).isOk());
  ASSERT_TRUE(s->release(AppId("a"), r.allocations[1].slot).isOk());
  EXPECT_EQ(s->numContainers(), 1u);
  EXPECT_EQ(s->clusterUsed(), Resource(1024, 1));
  auto gone = s->removeApp(AppId("a"));
  ASSERT_TRUE(gone.isOk());
  ASSERT_EQ(gone->size(), 1u);
  EXPECT_EQ(gone->front().container, r.allocations[2].container);
  EXPECT_EQ(s->numContainers(), 0u);
}

// A container's strings (its id, its request id) are kept beside the pool
// by slot, only for containers that have one: a slot reused by a container
// without them names none of the old one's.
TEST(SchedulerTest, AReusedContainerSlotKeepsNoneOfTheOldStrings) {
  SchedulerOptions o;
  o.index_container_ids = false;
  auto s = make(o);
  ASSERT_TRUE(s->addNode(NodeId("n1"), Resource(4096, 4), {}).isOk());
  ASSERT_TRUE(s->addApp(AppId("a"), UserId("u"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("a"), {ask(1, Resource(1024, 1), 1, "stage-x")}).isOk());
  auto r = beat(*s, "n1", kT0);
  ASSERT_EQ(r.allocations.size(), 1u);
  EXPECT_EQ(r.allocations[0].request_id, "stage-x");
  ASSERT_TRUE(s->containerCompleted(r.allocations[0].slot).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("a"), {ask(1, Resource(1024, 1), 2)}).isOk());
  auto again = beat(*s, "n1", kT0 + Seconds(1));
  ASSERT_EQ(again.allocations.size(), 1u);
  EXPECT_EQ(again.allocations[0].slot.index, r.allocations[0].slot.index);
  EXPECT_EQ(again.allocations[0].request_id, "");
  EXPECT_NE(again.allocations[0].container, r.allocations[0].container);
  auto gone = s->removeApp(AppId("a"));
  ASSERT_TRUE(gone.isOk());
  ASSERT_EQ(gone->size(), 1u);
  EXPECT_EQ(gone->front().request_id, "");
  EXPECT_EQ(gone->front().container, again.allocations[0].container);
}

// The prefetch hints take any slot (live, stale, out of range) and change
// nothing.
TEST(SchedulerTest, PrefetchHintsTakeAnySlotAndChangeNothing) {
  auto s = make();
  ASSERT_TRUE(s->addNode(NodeId("n1"), Resource(4096, 4), {}).isOk());
  ASSERT_TRUE(s->addApp(AppId("a"), UserId("u"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("a"), {ask(3)}).isOk());
  auto r = beat(*s, "n1", kT0);
  ASSERT_EQ(r.allocations.size(), 3u);
  ASSERT_TRUE(s->containerCompleted(r.allocations[1].slot).isOk());
  for (ContainerSlot c : {r.allocations[0].slot, r.allocations[1].slot, ContainerSlot{-1, 0},
                          ContainerSlot{1 << 20, 0}}) {
    s->prefetchContainer(c);
    s->prefetchNeighbours(c);
  }
  EXPECT_EQ(s->numContainers(), 2u);
  EXPECT_EQ(s->clusterUsed(), Resource(2048, 2));
  ASSERT_TRUE(s->containerCompleted(r.allocations[2].slot).isOk());
  EXPECT_EQ(s->clusterUsed(), Resource(1024, 1));
}

// By slot (appSlot, updateAsks by AppSlot, nodeUpdate into a SlotUpdate,
// containerCompleted by ContainerSlot) without the id index, a scheduler
// decides as one driven by ids with the index: the same containers in the
// same order on every heartbeat (slots, apps, resources, priorities), the
// same kills and notices (the lazily formatted ids equal the indexed ones),
// and the same containers returned by removeApp. Reservations lend to ad-hoc
// apps and take their guarantee back, so notices, kills and withdrawals all
// occur.
TEST(SchedulerTest, BySlotWithoutTheIndexDecidesAsByIdWithIt) {
  for (uint32_t seed : {1u, 2u, 3u, 4u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    SchedulerOptions by_id_opts;
    by_id_opts.preemption_grace = Millis(2000);
    SchedulerOptions by_slot_opts = by_id_opts;
    by_slot_opts.index_container_ids = false;
    auto by_id = make(by_id_opts);
    auto by_slot = make(by_slot_opts);
    std::mt19937 rng(seed);
    std::vector<NodeSlot> nodes;
    for (int i = 0; i < 6; i++) {
      for (Scheduler* s : {by_id.get(), by_slot.get()}) {
        ASSERT_TRUE(s->addNode(NodeId("n" + std::to_string(i)), Resource(8192, 8), {}).isOk());
      }
      nodes.push_back(*by_slot->nodeSlot(NodeId("n" + std::to_string(i))));
    }
    for (Scheduler* s : {by_id.get(), by_slot.get()}) {
      ASSERT_TRUE(
          s->setReservation(ReservationId("r"), ReservationKind::kPeriodic, Resource()).isOk());
    }
    std::vector<AppId> ids;
    std::vector<AppSlot> slots;
    std::vector<Allocation> by_id_live;  // by_id's live containers (completed at random)
    std::vector<ContainerSlot> by_slot_live;
    int64_t taken = 0;
    for (int step = 0; step < 60; step++) {
      const TimePoint now = kT0 + Seconds(step);
      // Apps come and go; the reservation's guarantee moves (lending, then
      // preemption when it rises).
      if (step % 7 == 0) {
        const AppId id("app" + std::to_string(step));
        const QueueRef q = step % 14 == 0 ? QueueRef::reservation(ReservationId("r"))
                                          : QueueRef::adhoc("root.default");
        for (Scheduler* s : {by_id.get(), by_slot.get()}) {
          ASSERT_TRUE(s->addApp(id, UserId("u" + std::to_string(step % 3)), q).isOk());
        }
        ids.push_back(id);
        slots.push_back(*by_slot->appSlot(id));
      }
      if (step % 10 == 5) {
        const Resource g(1024 * static_cast<int64_t>(rng() % 40), static_cast<int64_t>(rng() % 40));
        for (Scheduler* s : {by_id.get(), by_slot.get()}) {
          ASSERT_TRUE(s->setReservation(ReservationId("r"), ReservationKind::kPeriodic, g).isOk());
        }
      }
      for (size_t i = 0; i < ids.size(); i++) {
        if (rng() % 3 != 0) continue;
        const std::vector<ResourceRequest> asks = {
            ask(static_cast<int32_t>(rng() % 16), Resource(1024 * (1 + rng() % 3), 1 + rng() % 2),
                static_cast<int32_t>(rng() % 2))};
        const Status a = by_id->updateAsks(ids[i], asks);
        const Status b = by_slot->updateAsks(slots[i], asks);
        ASSERT_EQ(a.code(), b.code());
      }
      if (step % 13 == 12 && !ids.empty()) {
        const size_t i = rng() % ids.size();
        auto a = by_id->removeApp(ids[i]);
        auto b = by_slot->removeApp(ids[i]);
        ASSERT_TRUE(a.isOk() && b.isOk());
        ASSERT_EQ(a->size(), b->size());
        for (size_t k = 0; k < a->size(); k++) {
          EXPECT_EQ((*a)[k].container, (*b)[k].container);
          EXPECT_EQ((*a)[k].slot.index, (*b)[k].slot.index);
        }
        std::erase_if(by_id_live, [&](const Allocation& x) { return x.app == ids[i]; });
        by_slot_live.resize(by_id_live.size());
        for (size_t k = 0; k < by_id_live.size(); k++) by_slot_live[k] = by_id_live[k].slot;
        // A removed app's slot is stale, also once a later app reuses it.
        EXPECT_EQ(by_slot->updateAsks(slots[i], {ask(1)}).code(), StatusCode::kNotFound);
        ids.erase(ids.begin() + static_cast<std::ptrdiff_t>(i));
        slots.erase(slots.begin() + static_cast<std::ptrdiff_t>(i));
      }
      SlotUpdate u;
      for (size_t n = 0; n < nodes.size(); n++) {
        auto a = by_id->nodeUpdate(NodeId("n" + std::to_string(n)), now);
        ASSERT_TRUE(a.isOk());
        ASSERT_TRUE(by_slot->nodeUpdate(nodes[n], now, &u).isOk());
        ASSERT_EQ(a->allocations.size(), u.grants.size());
        for (size_t k = 0; k < u.grants.size(); k++) {
          const Allocation& x = a->allocations[k];
          const SlotGrant& y = u.grants[k];
          EXPECT_EQ(x.slot.index, y.container.index);
          EXPECT_EQ(x.slot.generation, y.container.generation);
          EXPECT_EQ(*by_slot->appSlot(x.app), y.app);
          EXPECT_EQ(x.resource, y.resource);
          EXPECT_EQ(x.priority, y.priority);
          by_id_live.push_back(x);
          by_slot_live.push_back(y.container);
        }
        ASSERT_EQ(a->to_kill.size(), u.to_kill.size());
        for (size_t k = 0; k < u.to_kill.size(); k++) {
          EXPECT_EQ(a->to_kill[k].slot.index, u.to_kill[k].index);
          ASSERT_TRUE(by_id->containerCompleted(a->to_kill[k].container).isOk());
          ASSERT_TRUE(by_slot->containerCompleted(u.to_kill[k]).isOk());
        }
      }
      // Some containers end.
      for (size_t k = 0; k < by_id_live.size();) {
        if (rng() % 6 != 0) {
          k++;
          continue;
        }
        const StatusCode a = by_id->containerCompleted(by_id_live[k].container).status().code();
        EXPECT_EQ(by_slot->containerCompleted(by_slot_live[k]).code(), a);
        by_id_live.erase(by_id_live.begin() + static_cast<std::ptrdiff_t>(k));
        by_slot_live.erase(by_slot_live.begin() + static_cast<std::ptrdiff_t>(k));
      }
      EXPECT_EQ(by_slot->numUntakenNotices(), by_id->numUntakenNotices());
      if (step % 3 == 0) {
        for (const AppId& id : ids) {
          const auto a = by_id->takePreemptionNotices(id);
          const auto b = by_slot->takePreemptionNotices(id);
          ASSERT_EQ(a.size(), b.size());
          taken += static_cast<int64_t>(a.size());
          for (size_t k = 0; k < a.size(); k++) EXPECT_EQ(a[k].container, b[k].container);
        }
        EXPECT_EQ(by_slot->numUntakenNotices(), 0);
      }
      EXPECT_EQ(by_slot->clusterUsed(), by_id->clusterUsed());
    }
    EXPECT_GT(taken, 0);  // preemption happened
  }
}

// Asks with the same request id (or priority when ids are empty) replace earlier ones.
TEST(SchedulerTest, AsksReplaceByRequestIdAndPriority) {
  auto s = make();
  ASSERT_TRUE(s->addApp(AppId("a"), UserId("u"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(
      s->updateAsks(AppId("a"), {ask(5, Resource(1024, 1), 1, "x"), ask(3, Resource(1024, 1), 2)})
          .isOk());
  EXPECT_EQ(s->appPending(AppId("a")).value(), 8);
  ASSERT_TRUE(s->updateAsks(AppId("a"), {ask(2, Resource(1024, 1), 7, "x")}).isOk());
  EXPECT_EQ(s->appPending(AppId("a")).value(), 5);
  ASSERT_TRUE(s->updateAsks(AppId("a"), {ask(0, Resource(1024, 1), 2)}).isOk());
  EXPECT_EQ(s->appPending(AppId("a")).value(), 2);
  // Priority order inside the app: lower first.
  ASSERT_TRUE(s->updateAsks(AppId("a"), {ask(1, Resource(1024, 1), 0, "urgent")}).isOk());
  ASSERT_TRUE(s->addNode(NodeId("n1"), Resource(1024, 1), {}).isOk());
  auto r = beat(*s, "n1", kT0);
  ASSERT_EQ(r.allocations.size(), 1u);
  EXPECT_EQ(r.allocations[0].request_id, "urgent");
  EXPECT_EQ(r.allocations[0].priority, 0);
}

// Invalid inputs are rejected with the field named and leave no partial state.
TEST(SchedulerTest, InvalidInputsNameTheField) {
  SchedulerOptions bad;
  bad.adhoc_queues = {{"root.a", 0}};
  auto c = Scheduler::create(bad);
  ASSERT_FALSE(c.isOk());
  EXPECT_NE(c.status().message().find("adhoc_queues[0].weight"), std::string::npos);
  bad.adhoc_queues = {{"prod", 1}};
  EXPECT_EQ(Scheduler::create(bad).status().code(), StatusCode::kInvalidArgument);
  bad.adhoc_queues = {{"root.a", 1}, {"root.a", 2}};
  EXPECT_EQ(Scheduler::create(bad).status().code(), StatusCode::kInvalidArgument);

  SchedulerOptions o;
  o.adhoc_queues = {{"root.p.leaf", 1}};
  auto s = make(o);
  auto st = s->addApp(AppId("a"), UserId("u"), QueueRef::reservation(ReservationId("r_missing")));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("queue.reservation_id"), std::string::npos);
  EXPECT_NE(st.message().find("r_missing"), std::string::npos);
  st = s->addApp(AppId("a"), UserId("u"), QueueRef::adhoc("root.nope"));
  EXPECT_NE(st.message().find("queue.path"), std::string::npos);
  EXPECT_EQ(s->addApp(AppId("a"), UserId("u"), QueueRef::adhoc("root.p")).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(s->addApp(AppId("a"), UserId(""), QueueRef::adhoc("root.p.leaf")).code(),
            StatusCode::kInvalidArgument);
  ASSERT_TRUE(s->addApp(AppId("a"), UserId("u"), QueueRef::adhoc("root.p.leaf")).isOk());
  EXPECT_EQ(s->addApp(AppId("a"), UserId("u"), QueueRef::adhoc("root.p.leaf")).code(),
            StatusCode::kAlreadyExists);

  ASSERT_TRUE(s->updateAsks(AppId("a"), {ask(2, Resource(1024, 1), 1, "keep")}).isOk());
  st = s->updateAsks(AppId("a"), {ask(0, Resource(1024, 1), 1, "keep"), ask(-1)});
  EXPECT_NE(st.message().find("asks[1].count"), std::string::npos);
  EXPECT_EQ(s->appPending(AppId("a")).value(), 2);  // the first ask was not applied
  st = s->updateAsks(AppId("a"), {ask(1, Resource())});
  EXPECT_NE(st.message().find("asks[0].capability"), std::string::npos);
  st = s->updateAsks(AppId("a"), {ask(5, Resource(1024, 1), 1, "g", 2)});
  EXPECT_NE(st.message().find("asks[0].count"), std::string::npos);
  st = s->updateAsks(AppId("a"),
                     {ask(1, Resource(1024, 1), 1, "d"), ask(1, Resource(1024, 1), 2, "d")});
  EXPECT_NE(st.message().find("asks[1].request_id"), std::string::npos);
  EXPECT_EQ(s->updateAsks(AppId("zz"), {ask(1)}).code(), StatusCode::kNotFound);

  EXPECT_NE(s->addNode(NodeId("n"), Resource(), {}).message().find("total"), std::string::npos);
  EXPECT_EQ(s->addNode(NodeId("n"), Resource(-1, 4), {}).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(s->addNode(NodeId("n"), Resource(1024, 1), {}).isOk());
  EXPECT_EQ(s->addNode(NodeId("n"), Resource(1024, 1), {}).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(s->setReservation(ReservationId("r"), ReservationKind::kOneOff, Resource(-1, 0)).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(s->removeReservation(ReservationId("r")).code(), StatusCode::kNotFound);
  EXPECT_EQ(s->removeApp(AppId("zz")).status().code(), StatusCode::kNotFound);
}

// A removed reservation keeps its apps running without a guarantee; new apps cannot bind.
TEST(SchedulerTest, RemovedReservationLingersForItsApps) {
  auto s = make();
  ASSERT_TRUE(s->addNode(NodeId("n1"), Resource(8192, 8), {}).isOk());
  ASSERT_TRUE(
      s->setReservation(ReservationId("r1"), ReservationKind::kPeriodic, Resource(4096, 4)).isOk());
  ASSERT_TRUE(
      s->addApp(AppId("a"), UserId("u"), QueueRef::reservation(ReservationId("r1"))).isOk());
  ASSERT_TRUE(s->addApp(AppId("x"), UserId("u"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("a"), {ask(2)}).isOk());
  ASSERT_EQ(beat(*s, "n1", kT0).allocations.size(), 2u);
  ASSERT_TRUE(s->removeReservation(ReservationId("r1")).isOk());
  EXPECT_EQ(s->addApp(AppId("b"), UserId("u"), QueueRef::reservation(ReservationId("r1"))).code(),
            StatusCode::kInvalidArgument);
  // The app's further asks now come after ad-hoc work.
  ASSERT_TRUE(s->updateAsks(AppId("a"), {ask(6)}).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("x"), {ask(6)}).isOk());
  auto m = countByApp(beat(*s, "n1", kT0).allocations);
  EXPECT_EQ(m["x"], 6);
  EXPECT_EQ(m["a"], 0);
  ASSERT_TRUE(s->removeApp(AppId("a")).isOk());
  EXPECT_EQ(s->queueUsed(QueueRef::reservation(ReservationId("r1"))).status().code(),
            StatusCode::kNotFound);
}

// Same calls, same decisions: a randomised workload replayed gives identical allocations.
TEST(SchedulerTest, DeterministicGivenSameCalls) {
  uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  auto run = [seed]() {
    std::mt19937 rng(seed);
    SchedulerOptions o;
    o.adhoc_queues = {{"root.a", 2}, {"root.b", 1}};
    auto s = make(o);
    for (int i = 0; i < 20; i++)
      (void)s->addNode(NodeId("n" + std::to_string(i)), Resource(16384, 8), {});
    (void)s->setReservation(ReservationId("r"), ReservationKind::kPeriodic, Resource(8192, 8));
    for (int i = 0; i < 12; i++) {
      QueueRef q = i % 3 == 0 ? QueueRef::reservation(ReservationId("r"))
                              : QueueRef::adhoc(i % 3 == 1 ? "root.a" : "root.b");
      (void)s->addApp(AppId("app" + std::to_string(i)), UserId("u" + std::to_string(i % 4)), q);
    }
    std::vector<std::string> log;
    for (int step = 0; step < 30; step++) {
      for (int i = 0; i < 12; i++) {
        if (rng() % 3 == 0) {
          (void)s->updateAsks(AppId("app" + std::to_string(i)),
                              {ask(static_cast<int32_t>(rng() % 6),
                                   Resource(1024 * (1 + rng() % 3), 1 + rng() % 2))});
        }
      }
      auto r = s->schedulePass(kT0 + Seconds(step));
      for (const auto& a : r.allocations) log.push_back(a.container.value() + "@" + a.node.value());
      for (const auto& k : r.to_kill) (void)s->containerCompleted(k.container);
      if (step % 5 == 4 && !r.allocations.empty())
        (void)s->containerCompleted(r.allocations.front().container);
    }
    return log;
  };
  auto a = run();
  auto b = run();
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace morpheus::sched

namespace morpheus::sched {
namespace {

// queues() reports every ad-hoc queue (parents with their leaves' usage,
// pending asks and apps) and every reservation queue with its guarantee.
TEST(SchedulerTest, QueuesReadViewReportsUsagePendingAndApps) {
  SchedulerOptions o;
  o.adhoc_queues = {{"root.prod", 3}, {"root.prod.etl", 2}, {"root.dev", 1}};
  auto s = make(o);
  ASSERT_TRUE(s->addNode(NodeId("n1"), Resource(4096, 4), {}).isOk());
  ASSERT_TRUE(
      s->setReservation(ReservationId("r1"), ReservationKind::kPeriodic, Resource(1024, 1)).isOk());
  ASSERT_TRUE(s->addApp(AppId("a1"), UserId("u"), QueueRef::adhoc("root.prod.etl")).isOk());
  ASSERT_TRUE(
      s->addApp(AppId("a2"), UserId("v"), QueueRef::reservation(ReservationId("r1"))).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("a1"), {ask(5)}).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("a2"), {ask(2)}).isOk());
  beat(*s, "n1", kT0);  // 4 slots: r1 gets its guaranteed 1 first, the rest is shared
  std::map<std::string, QueueView> by;
  for (const auto& q : s->queues()) {
    by[q.ref.isReservation() ? "res:" + q.ref.reservationId().value() : q.ref.adhocPath()] = q;
  }
  ASSERT_EQ(by.size(), 5u);  // root, root.prod, root.prod.etl, root.dev, res:r1
  const QueueView& etl = by["root.prod.etl"];
  EXPECT_TRUE(etl.leaf);
  EXPECT_DOUBLE_EQ(etl.weight, 2.0);
  EXPECT_EQ(etl.apps, 1);
  EXPECT_EQ(etl.used + etl.pending, Resource(5 * 1024, 5));
  EXPECT_EQ(etl.pending_containers, etl.pending.vcores());
  EXPECT_FALSE(by["root.prod"].leaf);
  EXPECT_EQ(by["root.prod"].used, etl.used);
  EXPECT_EQ(by["root"].pending, etl.pending);
  EXPECT_EQ(by["root.dev"].apps, 0);
  EXPECT_TRUE(by["root.dev"].used.isZero());
  const QueueView& r1 = by["res:r1"];
  EXPECT_EQ(r1.kind, ReservationKind::kPeriodic);
  EXPECT_EQ(r1.guaranteed, Resource(1024, 1));
  EXPECT_EQ(r1.apps, 1);
  EXPECT_EQ(r1.used + r1.pending, Resource(2 * 1024, 2));
  EXPECT_EQ(r1.pending_containers, r1.pending.vcores());
  EXPECT_EQ(etl.used + r1.used, Resource(4096, 4));
}

}  // namespace
}  // namespace morpheus::sched

namespace morpheus::sched {
namespace {

// floorDiv (the kill re-check walk's division) equals integer division on
// the quotients next to every multiple of the divisor, on random operands
// up to 2^52 and beyond, and on the bounds.
TEST(FloorDivTest, EqualsIntegerDivision) {
  std::mt19937_64 rng(7);
  auto check = [](int64_t a, int64_t b) {
    ASSERT_EQ(floorDiv(a, b, 1.0 / static_cast<double>(b)), a / b) << a << " / " << b;
  };
  for (int64_t b = 1; b <= 300; b++) {
    for (int64_t q = 0; q <= 300; q++) {
      for (int64_t d = -1; d <= 1; d++) {
        if (q * b + d >= 0) check(q * b + d, b);
      }
    }
  }
  for (int i = 0; i < 200000; i++) {
    const int shift = static_cast<int>(rng() % 62);
    const auto a = static_cast<int64_t>(rng() >> (2 + shift % 62));
    const auto b = static_cast<int64_t>(rng() >> (2 + rng() % 61)) + 1;
    check(a, b);
    check((a / b) * b, b);
    check((a / b) * b - ((a / b) * b > 0 ? 1 : 0), b);
  }
  check(0, 1);
  check((int64_t{1} << 52) - 1, 3);
  check(int64_t{1} << 52, 3);
  check(std::numeric_limits<int64_t>::max(), 1);
  check(std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::max());
}

// ShapeLists against a plain record of every id given: an id always names
// one list (two different lists never share one), and a list asked for
// again at once gets the id it just got; random lists of a few shapes, so
// that lists collide in the table and replace each other.
TEST(ShapeListsTest, AnIdNamesOneList) {
  std::mt19937 rng(11);
  ShapeLists lists;
  std::map<uint64_t, ShapeLists::List> named;
  int64_t repeats = 0;
  for (int i = 0; i < 200000; i++) {
    ShapeLists::List list(rng() % 6);
    for (auto& [mem, vc] : list) {
      mem = 1024 * static_cast<int64_t>(1 + rng() % 3);
      vc = static_cast<int64_t>(1 + rng() % 2);
    }
    const uint64_t id = lists.idOf(list);
    ASSERT_NE(id, 0u);
    auto [it, fresh] = named.emplace(id, list);
    if (!fresh) repeats++;
    ASSERT_EQ(it->second, list) << "id " << id << " names two lists";
    ASSERT_EQ(lists.idOf(list), id);
  }
  EXPECT_GT(repeats, 40000);  // many lookups find their list's id again
}

// Lists that differ in memory only (the simulator's grouped containers:
// 32 and 64 GiB of 16 vcores, 64 GiB of 8), far fewer than the table
// holds, keep their ids while they are looked up in turn, so the re-check's remembered placements
// under an id are found again (they were not, and the walk recounted every word).
TEST(ShapeListsTest, FewListsKeepTheirIdsInTurn) {
  ShapeLists::List shapes = {{32768, 16}, {65536, 8}, {65536, 16}, {16384, 16}};
  std::vector<ShapeLists::List> lists;
  std::sort(shapes.begin(), shapes.end());
  do {
    for (size_t n = 1; n <= shapes.size(); n++)
      lists.emplace_back(shapes.begin(), shapes.begin() + static_cast<std::ptrdiff_t>(n));
  } while (std::next_permutation(shapes.begin(), shapes.end()));
  std::sort(lists.begin(), lists.end());
  lists.erase(std::unique(lists.begin(), lists.end()), lists.end());
  ASSERT_EQ(lists.size(), 64u);  // 4 + 12 + 24 + 24
  ShapeLists ids;
  std::vector<uint64_t> first;
  for (const auto& l : lists) first.push_back(ids.idOf(l));
  int64_t moved = 0;
  for (int round = 0; round < 10; round++) {
    for (size_t i = 0; i < lists.size(); i++) moved += ids.idOf(lists[i]) != first[i];
  }
  // 64 lists in 64 sets of 4 entries: all of them kept.
  EXPECT_EQ(moved, 0);
}

// KeyFrontier's walk of a binary min-heap (startAt, passTopOf) against the
// heap's keys sorted: it gives every entry `wanted` accepts once, in key
// order, and no other, for random heaps of distinct keys and random
// acceptances (none, some, all); and its push, pop and replaceTop against a
// sorted set.
TEST(KeyFrontierTest, WalksAHeapInKeyOrder) {
  using K = std::pair<double, uint64_t>;
  struct Keys {
    std::vector<K> v;
    size_t size() const { return v.size(); }
    const K& keyAt(size_t i) const { return v[i]; }
  };
  std::mt19937 rng(13);
  KeyFrontier<K> fr;
  for (int round = 0; round < 3000; round++) {
    Keys h;
    const size_t n = rng() % 100;
    for (uint64_t k = 0; k < n; k++) h.v.emplace_back(static_cast<double>(rng() % 20), k);
    std::make_heap(h.v.begin(), h.v.end(), std::greater<>());
    const uint32_t share = rng() % 5;  // of 4: 0 none, 4 all
    std::vector<bool> accept(n);
    std::vector<K> want;
    for (size_t i = 0; i < n; i++) {
      accept[i] = rng() % 4 < share;
      if (accept[i]) want.push_back(h.v[i]);
    }
    std::sort(want.begin(), want.end());
    const auto wanted = [&](size_t i) { return static_cast<bool>(accept[i]); };
    std::vector<K> got;
    fr.startAt(h, wanted);
    while (!fr.empty()) {
      ASSERT_EQ(fr.topKey(), h.keyAt(fr.top()));
      got.push_back(fr.topKey());
      fr.passTopOf(h, wanted);
    }
    ASSERT_EQ(got, want);
  }
  std::set<std::pair<int, uint32_t>> ref;
  KeyFrontier<std::pair<int, uint32_t>> f;
  for (uint32_t i = 0; i < 200000; i++) {
    const std::pair<int, uint32_t> k{static_cast<int>(rng() % 50), i};
    const uint32_t op = ref.empty() ? 0 : rng() % 3;
    if (op == 0) {
      f.push(k, i);
      ref.insert(k);
    } else if (op == 1) {
      f.pop();
      ref.erase(ref.begin());
    } else {
      f.replaceTop(k, i);
      ref.erase(ref.begin());
      ref.insert(k);
    }
    ASSERT_EQ(f.size(), ref.size());
    if (!ref.empty()) {
      ASSERT_EQ(f.topKey(), *ref.begin());
      ASSERT_EQ(f.top(), ref.begin()->second);
    }
  }
}

}  // namespace
}  // namespace morpheus::sched
