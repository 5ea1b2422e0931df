// Differential test of the scheduler's pending-ask index (scale
// work): a heartbeat now descends only into entities with a pending ask whose
// need fits the node (FitIndex in scheduler.cc), instead of visiting every app
// with demand. Decisions must not change. reference_scheduler.{h,cc} is the
// scheduler core as it was before the index, kept verbatim in another
// namespace; both are driven with the same random calls (queues, users,
// reservations rising and falling, shapes, gangs, hard and soft constraints,
// releases, completions, recovered AMs, removals) and every result is
// compared: allocations, kills, notices and errors.
// Also what the core does for scale since: heaps only its walk reads keep a
// child with nothing placeable in place (flagged) instead of taking it out
// (descendInPlace), and an end reported by slot defers its app's re-keying
// to the next call (flushStale).
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "reference_scheduler.h"
#include "scheduler/scheduler.h"

namespace morpheus::sched {
namespace {

std::string show(const std::vector<Allocation>& v) {
  std::ostringstream o;
  for (const auto& a : v) {
    o << a.container.value() << '@' << a.node.value() << ' ' << a.app.value() << ' '
      << a.resource.toString() << " p" << a.priority << ' ' << a.request_id << " r"
      << a.reservation.value() << (a.am ? " am" : "") << '\n';
  }
  return o.str();
}

std::string show(const std::vector<PreemptionNotice>& v) {
  std::ostringstream o;
  for (const auto& n : v) {
    o << n.container.value() << '@' << n.node.value() << ' ' << toEpochMs(n.deadline) << '\n';
  }
  return o.str();
}

template <typename T>
std::string show(const Result<T>& r) {
  return r.isOk() ? "ok" : r.status().message();
}
std::string show(const Status& s) { return s.isOk() ? "ok" : s.message(); }

class Twin {
 public:
  // `users`: distinct users of the ad-hoc apps; `by_slot`: ends and
  // releases go to the indexed core by slot (the reference by id).
  explicit Twin(uint32_t seed, int users = 3, bool by_slot = false)
      : rng_(seed), users_(users), by_slot_(by_slot) {
    SchedulerOptions o;
    o.adhoc_queues = {{"root.a", 1.0}, {"root.b.x", 2.0}, {"root.b.y", 1.0}};
    o.preemption_grace = Millis(2000);
    o.soft_constraint_delay = Millis(3000);
    o.borrowing_reservations_share = seed % 2 == 0;
    idx_ = std::move(Scheduler::create(o)).value();
    ref_ = std::move(reference::Scheduler::create(o)).value();
    static const Resource kNodeSizes[] = {Resource(8192, 4), Resource(16384, 8),
                                          Resource(32768, 16)};
    const int nodes = 2 + pick(6);
    for (int i = 0; i < nodes; i++) {
      nodes_.emplace_back("n" + std::to_string(i));
      std::map<std::string, std::string> attrs{{"rack", "r" + std::to_string(i % 2)}};
      if (pick(3) == 0) attrs["gpu"] = "yes";
      const Resource size = kNodeSizes[pick(3)];
      same(idx_->addNode(nodes_.back(), size, attrs), ref_->addNode(nodes_.back(), size, attrs));
    }
    for (int i = 0; i < 4; i++) {
      reservations_.emplace_back("r" + std::to_string(i));
      setGuarantee(i);
    }
    for (int i = 0; i < 8; i++) addApp();
  }

  void step() {
    now_ += Millis(pick(2000));
    switch (pick(12)) {
      case 0:
      case 1:
      case 2:
      case 3:
        beat();
        break;
      case 4:
      case 5:
        updateAsks();
        break;
      case 6:
        setGuarantee(pick(static_cast<int>(reservations_.size())));
        break;
      case 7:
        complete();
        break;
      case 8:
        release();
        break;
      case 9:
        if (pick(4) == 0) removeApp();
        if (pick(2) == 0) addApp();
        break;
      case 10:
        if (pick(3) == 0) recoverAm();
        if (pick(15) == 0) removeReservation();
        break;
      case 11:
        pass();
        break;
    }
  }

  int64_t granted = 0;

 private:
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

  void same(const Status& a, const Status& b) { EXPECT_EQ(show(a), show(b)); }

  void setGuarantee(int i) {
    const Resource g = Resource(2048, 1) * pick(14);
    const auto kind = pick(2) == 0 ? ReservationKind::kPeriodic : ReservationKind::kOneOff;
    const ReservationId& id = reservations_[static_cast<size_t>(i)];
    same(idx_->setReservation(id, kind, g), ref_->setReservation(id, kind, g));
  }

  void removeReservation() {
    const ReservationId& id =
        reservations_[static_cast<size_t>(pick(static_cast<int>(reservations_.size())))];
    same(idx_->removeReservation(id), ref_->removeReservation(id));
  }

  void addApp() {
    AppId id("app" + std::to_string(next_app_++));
    static const char* kLeaves[] = {"root.a", "root.b.x", "root.b.y"};
    QueueRef q = QueueRef::adhoc(kLeaves[pick(3)]);
    if (pick(2) == 0) {
      q = QueueRef::reservation(
          reservations_[static_cast<size_t>(pick(static_cast<int>(reservations_.size())))]);
    }
    const UserId user("u" + std::to_string(pick(users_)));
    const Status a = idx_->addApp(id, user, q);
    same(a, ref_->addApp(id, user, q));
    if (a.isOk()) apps_.push_back(id);
  }

  const AppId* someApp() {
    if (apps_.empty()) return nullptr;
    return &apps_[static_cast<size_t>(pick(static_cast<int>(apps_.size())))];
  }

  void removeApp() {
    const AppId* a = someApp();
    if (a == nullptr) return;
    auto x = idx_->removeApp(*a);
    auto y = ref_->removeApp(*a);
    ASSERT_EQ(x.isOk(), y.isOk());
    EXPECT_EQ(show(*x), show(*y));
    for (const auto& c : *x) forget(c.container);
    apps_.erase(apps_.begin() + (a - apps_.data()));
  }

  ResourceRequest randomAsk() {
    static const Resource kShapes[] = {Resource(1024, 1), Resource(2048, 1), Resource(1024, 2),
                                       Resource(4096, 2), Resource(12288, 6)};
    ResourceRequest r;
    const int id = pick(3);
    r.request_id = "p" + std::to_string(id);
    r.priority = pick(3);
    r.capability = kShapes[pick(5)];
    r.gang_size = pick(5) == 0 ? 2 : (pick(2) == 0 ? 0 : 1);
    r.count = pick(7);
    if (r.gang_size == 2) r.count -= r.count % 2;
    if (pick(5) == 0) {
      PlacementConstraint c;
      c.key = pick(2) == 0 ? "gpu" : "rack";
      if (c.key == "rack") c.values = {"r" + std::to_string(pick(2))};
      c.hard = pick(2) == 0;
      r.constraints.push_back(c);
    }
    return r;
  }

  void updateAsks() {
    const AppId* a = someApp();
    if (a == nullptr) return;
    std::vector<ResourceRequest> asks{randomAsk()};
    if (pick(3) == 0) asks.push_back(randomAsk());  // may duplicate: both must refuse
    same(idx_->updateAsks(*a, asks), ref_->updateAsks(*a, asks));
  }

  void recoverAm() {
    const AppId* a = someApp();
    if (a == nullptr) return;
    Allocation al;
    al.container = ContainerId("am" + std::to_string(next_am_++));
    al.app = *a;
    al.node = nodes_[static_cast<size_t>(pick(static_cast<int>(nodes_.size())))];
    al.resource = Resource(1024, 1);
    al.am = pick(3) != 0;
    const Status st = idx_->recoverContainer(al);
    same(st, ref_->recoverContainer(al));
    if (st.isOk()) live_.push_back(al);
  }

  // The slot the indexed core gave container `id` (index -1 for a
  // recovered AM: the Allocation the test made carries none).
  ContainerSlot slotOf(const ContainerId& id) const {
    for (const auto& c : live_) {
      if (c.container == id) return c.slot;
    }
    return ContainerSlot{};
  }

  void forget(const ContainerId& id) {
    std::erase_if(live_, [&id](const Allocation& c) { return c.container == id; });
  }

  void complete() {
    if (live_.empty()) return;
    const ContainerId id =
        live_[static_cast<size_t>(pick(static_cast<int>(live_.size())))].container;
    const ContainerSlot slot = slotOf(id);
    if (by_slot_ && slot.index >= 0) {
      EXPECT_EQ(show(idx_->containerCompleted(slot)), show(ref_->containerCompleted(id).status()));
    } else {
      auto x = idx_->containerCompleted(id);
      EXPECT_EQ(show(x), show(ref_->containerCompleted(id)));
    }
    forget(id);
  }

  void release() {
    if (live_.empty()) return;
    const Allocation c = live_[static_cast<size_t>(pick(static_cast<int>(live_.size())))];
    if (by_slot_ && c.slot.index >= 0) {
      EXPECT_EQ(show(idx_->release(c.app, c.slot)),
                show(ref_->release(c.app, c.container).status()));
    } else {
      auto x = idx_->release(c.app, c.container);
      EXPECT_EQ(show(x), show(ref_->release(c.app, c.container)));
    }
    forget(c.container);
  }

  void record(const NodeUpdateResult& x, const NodeUpdateResult& y) {
    EXPECT_EQ(show(x.allocations), show(y.allocations));
    EXPECT_EQ(show(x.to_kill), show(y.to_kill));
    for (const auto& a : x.allocations) live_.push_back(a);
    granted += static_cast<int64_t>(x.allocations.size());
    for (const auto& k : x.to_kill) {
      if (pick(2) == 0) {
        if (by_slot_) {
          EXPECT_EQ(show(idx_->containerCompleted(k.slot)),
                    show(ref_->containerCompleted(k.container).status()));
        } else {
          EXPECT_EQ(show(idx_->containerCompleted(k.container)),
                    show(ref_->containerCompleted(k.container)));
        }
        forget(k.container);
      }
    }
    for (const auto& a : apps_) {
      EXPECT_EQ(show(idx_->takePreemptionNotices(a)), show(ref_->takePreemptionNotices(a)));
    }
    EXPECT_EQ(idx_->clusterUsed(), ref_->clusterUsed());
  }

  void beat() {
    const NodeId& n = nodes_[static_cast<size_t>(pick(static_cast<int>(nodes_.size())))];
    auto x = idx_->nodeUpdate(n, now_);
    auto y = ref_->nodeUpdate(n, now_);
    ASSERT_TRUE(x.isOk() && y.isOk());
    record(*x, *y);
  }

  void pass() { record(idx_->schedulePass(now_), ref_->schedulePass(now_)); }

  std::mt19937 rng_;
  int users_;
  bool by_slot_;
  std::unique_ptr<Scheduler> idx_;
  std::unique_ptr<reference::Scheduler> ref_;
  TimePoint now_ = fromEpochMs(1'800'000'000'000);
  std::vector<NodeId> nodes_;
  std::vector<ReservationId> reservations_;
  std::vector<AppId> apps_;
  std::vector<Allocation> live_;
  int next_app_ = 0, next_am_ = 0;
};

// On random instances the indexed scheduler makes exactly the decisions of the
// pre-index full walk: same containers on the same nodes in the same order,
// same kills, notices and errors, after every call.
TEST(SchedulerAskIndexTest, SameDecisionsAsFullWalkOnRandomInstances) {
  int64_t granted = 0;
  for (uint32_t seed = 1; seed <= 120; seed++) {
    Twin twin(seed);
    for (int i = 0; i < 250 && !::testing::Test::HasFailure(); i++) twin.step();
    ASSERT_FALSE(::testing::Test::HasFailure()) << "seed " << seed;
    granted += twin.granted;
  }
  // The instances must grant a lot, or the comparison proves little.
  EXPECT_GT(granted, 8000);
}

// The same with many users per leaf (the walk passes over users whose
// needs do not fit, deep in the leaf's heap, in place) and with ends and
// releases by slot (their apps re-keyed at the next call, however many
// ends came first).
TEST(SchedulerAskIndexTest, SameDecisionsWithManyUsersAndEndsBySlot) {
  int64_t granted = 0;
  for (uint32_t seed = 1; seed <= 120; seed++) {
    Twin twin(seed, 24, true);
    for (int i = 0; i < 250 && !::testing::Test::HasFailure(); i++) twin.step();
    ASSERT_FALSE(::testing::Test::HasFailure()) << "seed " << seed;
    granted += twin.granted;
  }
  EXPECT_GT(granted, 8000);
}

}  // namespace
}  // namespace morpheus::sched
