// Differential test of the scheduler's preemption selection (scale
// work): Scheduler::Impl::selectVictims merges per-borrower candidate lists
// and keeps the shortfall incrementally; it must pick exactly the victims of
// the original algorithm, which walked every container newest first on every
// heartbeat. That walk is kept here, over a model the test maintains from the
// public API only (allocations in grant order, notices, completions), and the
// two are compared after every heartbeat of random instances. The model also
// re-checks notices at their deadline (a notice no longer needed
// is withdrawn), and the kills are compared too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "scheduler/scheduler.h"

namespace morpheus::sched {
namespace {

Resource clampZero(const Resource& r) { return Resource::max(r, Resource()); }

struct ModelContainer {
  ContainerId id;
  AppId app;
  ReservationId res;  // "" = ad hoc
  Resource resource;
  bool am = false;
  bool noticed = false;
  bool alive = true;
  NodeId node;
  TimePoint deadline;      // of its notice
  bool kill_sent = false;  // returned in a to_kill list
};

bool belowWithDemand(const QueueView& v) {
  return v.pending_containers > 0 && !v.guaranteed.fitsIn(v.used);
}

int64_t fitCount(const Resource& room, const Resource& shape) {
  int64_t k = INT64_MAX;
  if (shape.memoryMib() > 0)
    k = std::min(k, std::max<int64_t>(0, room.memoryMib()) / shape.memoryMib());
  if (shape.vcores() > 0) k = std::min(k, std::max<int64_t>(0, room.vcores()) / shape.vcores());
  return k == INT64_MAX ? 0 : k;
}

// A reservation below its guarantee with demand: its need in containers of
// its largest pending ask (memory, then vcores), and how many have no room.
struct Starved {
  Resource shape;
  int64_t uncovered;
};

// What preemptIfNeeded decides from, from the public view: the starved
// reservations (by creation order), and per node its free room and its
// containers under notice.
struct Accounts {
  std::map<ReservationId, QueueView> res;
  Resource need;
  std::map<ReservationId, Resource> preempting;
  std::vector<Starved> starved;
  std::map<NodeId, Resource> free, noticed;

  // Places the starved containers in `room`, as many of each as fit, in order.
  int64_t place(std::vector<Starved>& st, Resource& room) const {
    int64_t placed = 0;
    for (auto& x : st) {
      const int64_t k = std::min(x.uncovered, fitCount(room, x.shape));
      room -= x.shape * k;
      x.uncovered -= k;
      placed += k;
    }
    return placed;
  }
  // The starved containers left without room when each node's room (free
  // plus under notice; `less` taken off `less_node`'s) takes as many as fit,
  // nodes in order; `rem` gets each node's room left.
  int64_t cover(std::vector<Starved>& st, std::map<NodeId, Resource>& rem,
                const NodeId& less_node = NodeId(""), const Resource& less = Resource()) const {
    int64_t uncovered = 0;
    for (const auto& x : st) uncovered += x.uncovered;
    for (const auto& [n, f] : free) {
      if (uncovered == 0) break;
      rem[n] = f + noticed.at(n) - (n == less_node ? less : Resource());
      uncovered -= place(st, rem[n]);
    }
    return uncovered;
  }
};

// The model's view of the apps: their reservation ("" = ad hoc) and their
// asks by request id (shape, containers still wanted).
struct ModelApp {
  ReservationId res;
  std::map<std::string, std::pair<Resource, int32_t>> asks;
};

Accounts accounts(const Scheduler& s, const std::vector<ModelContainer>& all,
                  const std::map<AppId, ModelApp>& apps, const std::vector<NodeId>& nodes,
                  const Resource& node_total) {
  Accounts a;
  for (auto& v : s.queues()) {
    if (v.ref.isReservation()) a.res.emplace(v.ref.reservationId(), v);
  }
  for (const auto& [id, v] : a.res) {  // r0, r1, r2: creation order
    if (!belowWithDemand(v)) continue;
    const Resource within = clampZero(v.guaranteed - v.used);
    a.need += Resource::min(v.pending, within);
    Resource shape;  // the largest pending ask within the guarantee
    for (const auto& [app_id, app] : apps) {
      if (app.res != id) continue;
      for (const auto& [req, ask] : app.asks) {
        if (ask.second > 0 && ask.first.fitsIn(within) &&
            std::pair(ask.first.memoryMib(), ask.first.vcores()) >
                std::pair(shape.memoryMib(), shape.vcores()))
          shape = ask.first;
      }
    }
    if (shape.isZero()) continue;
    const int64_t wanted =
        std::max((v.pending.memoryMib() + shape.memoryMib() - 1) / shape.memoryMib(),
                 (v.pending.vcores() + shape.vcores() - 1) / shape.vcores());
    a.starved.push_back(Starved{shape, std::min(fitCount(within, shape), wanted)});
  }
  for (const auto& n : nodes) {
    a.free[n] = node_total - s.nodeUsed(n).value();
    a.noticed[n] = Resource();
  }
  for (const auto& c : all) {
    if (!c.alive || !c.noticed) continue;
    a.noticed[c.node] += c.resource;
    if (!c.res.empty()) a.preempting[c.res] += c.resource;
  }
  return a;
}

// The re-check rule, written plainly: at a heartbeat of `node`, its noticed
// containers whose deadline passed, in allocation order, are killed if still
// needed (their reservation stays within its guarantee without them and the
// shortfall — the need less the room where a starved container fits — is not
// covered without them), else their notice is withdrawn. Updates the model;
// returns the kills.
std::vector<ContainerId> referenceKills(std::vector<ModelContainer>& all, const Accounts& before,
                                        const NodeId& node, TimePoint now) {
  Accounts a = before;
  std::vector<ContainerId> out;
  for (auto& c : all) {
    if (!c.alive || !c.noticed || c.kill_sent || c.node != node || now < c.deadline) continue;
    bool needed = true;
    if (!c.res.empty()) {
      const QueueView& v = a.res.at(c.res);
      needed = v.guaranteed.fitsIn(v.used - a.preempting[c.res]);
    }
    std::vector<Starved> st = a.starved;
    std::map<NodeId, Resource> rem;
    needed = needed && !a.need.isZero() && a.cover(st, rem, node, c.resource) > 0;
    if (needed) {
      c.kill_sent = true;
      out.push_back(c.id);
      continue;
    }
    c.noticed = false;
    a.noticed[node] -= c.resource;
    if (!c.res.empty()) a.preempting[c.res] -= c.resource;
  }
  return out;
}

// preemptIfNeeded written plainly: each reservation below its guarantee
// with demand needs its need in containers of its largest pending ask; they
// are placed in the nodes' room (free plus under notice). While some have no
// room, every container newest first (skipping AMs, containers under notice,
// reservations below their guarantee and containers a reservation cannot
// spare on top of those already taken) is taken on its node; when the node's
// room left with what it has taken fits a starved container still without
// room, the node's taken containers are the next victims and the starved
// containers that fit are placed there.
std::vector<ContainerId> referenceVictims(const std::vector<ModelContainer>& all,
                                          const Accounts& accounts) {
  Accounts a = accounts;
  std::vector<ContainerId> out;
  if (a.need.isZero()) return out;
  std::map<NodeId, Resource> rem;
  int64_t uncovered = a.cover(a.starved, rem);
  std::map<NodeId, std::vector<const ModelContainer*>> taken;
  std::map<NodeId, Resource> taken_room;
  std::map<ReservationId, Resource> taken_res;
  for (auto it = all.rbegin(); it != all.rend() && uncovered > 0; ++it) {
    const ModelContainer& c = *it;
    if (!c.alive || c.noticed || c.am) continue;
    if (!c.res.empty()) {
      const QueueView& v = a.res.at(c.res);
      if (belowWithDemand(v)) continue;
      if (!v.guaranteed.fitsIn(v.used - a.preempting[c.res] - taken_res[c.res] - c.resource))
        continue;
      taken_res[c.res] += c.resource;
    }
    taken[c.node].push_back(&c);
    taken_room[c.node] += c.resource;
    const Resource room = rem[c.node] + taken_room[c.node];
    if (std::none_of(a.starved.begin(), a.starved.end(),
                     [&](const Starved& x) { return x.uncovered > 0 && x.shape.fitsIn(room); }))
      continue;
    for (const ModelContainer* v : taken[c.node]) {
      out.push_back(v->id);
      if (!v->res.empty()) {
        a.preempting[v->res] += v->resource;
        taken_res[v->res] -= v->resource;
      }
    }
    taken[c.node].clear();
    taken_room[c.node] = Resource();
    rem[c.node] = room;
    uncovered -= a.place(a.starved, rem[c.node]);
  }
  return out;
}

const Resource kNodeTotal(16384, 8);

class Instance {
 public:
  // Nodes: min_nodes plus up to extra_nodes - 1 more, named in slot order
  // ("n000", "n001", ...: the reference walks them by name); asks and
  // guarantees are multiplied by `scale` to fill them.
  // With `by_slot`, notices are taken by slot (takePreemptionNotices into
  // a vector) and matched to the reference's per app by node and order.
  explicit Instance(uint32_t seed, int min_nodes = 2, int extra_nodes = 4, int scale = 1,
                    int reservations = 3, bool by_slot = false, int apps = 7)
      : rng_(seed), scale_(scale), by_slot_(by_slot) {
    SchedulerOptions o;
    o.adhoc_queues = {{"root.a", 1.0}, {"root.b", 2.0}};
    o.preemption_grace = Millis(2000);
    o.borrowing_reservations_share = seed % 2 == 0;
    s_ = std::move(Scheduler::create(o)).value();
    const int nodes = min_nodes + pick(extra_nodes);
    for (int i = 0; i < nodes; i++) {
      char name[16];
      std::snprintf(name, sizeof name, "n%03d", i);
      nodes_.emplace_back(name);
      EXPECT_TRUE(s_->addNode(nodes_.back(), kNodeTotal, {}).isOk());
    }
    for (int i = 0; i < reservations; i++) {
      // The model takes the reservations in name order as creation order.
      char name[16];
      std::snprintf(name, sizeof name, reservations > 10 ? "r%02d" : "r%d", i);
      reservations_.emplace_back(name);
      setGuarantee(i);
    }
    for (int i = 0; i < apps; i++) addApp();
  }

  // One random operation; heartbeats compare the victims with the reference.
  // With `beats` > 1, a heartbeat is that many (on large clusters, so that
  // the nodes fill between other operations).
  void step(int beats = 1) {
    now_ += Millis(pick(3000));
    switch (pick(10)) {
      case 0:
      case 1:
      case 2:
        for (int i = 0; i < beats && !::testing::Test::HasFatalFailure(); i++) beat();
        break;
      case 3:
      case 4:
        updateAsks();
        break;
      case 5:
        setGuarantee(pick(static_cast<int>(reservations_.size())));
        break;
      case 6:
        completeOne();
        break;
      case 7:
        if (pick(4) == 0) removeApp();
        if (pick(3) == 0) addApp();
        break;
      case 8:
        recoverAm();
        break;
      case 9:
        completeKilled();
        break;
    }
  }

 private:
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  Resource shape() {
    static const Resource kShapes[] = {Resource(1024, 1), Resource(2048, 1), Resource(1024, 2),
                                       Resource(4096, 2)};
    return kShapes[pick(4)];
  }

  void setGuarantee(int i) {
    Resource g = Resource(2048, 1) * (pick(12) * scale_);
    auto kind = pick(2) == 0 ? ReservationKind::kPeriodic : ReservationKind::kOneOff;
    EXPECT_TRUE(s_->setReservation(reservations_[static_cast<size_t>(i)], kind, g).isOk());
  }

  void addApp() {
    AppId id("app" + std::to_string(next_app_++));
    ReservationId res;
    QueueRef q = QueueRef::adhoc(pick(2) == 0 ? "root.a" : "root.b");
    if (pick(2) == 0) {
      res = reservations_[static_cast<size_t>(pick(static_cast<int>(reservations_.size())))];
      q = QueueRef::reservation(res);
    }
    ASSERT_TRUE(s_->addApp(id, UserId(pick(2) == 0 ? "u1" : "u2"), q).isOk());
    apps_.push_back(id);
    app_res_[id] = res;
    model_apps_[id] = ModelApp{res, {}};
  }

  void removeApp() {
    if (apps_.empty()) return;
    size_t i = static_cast<size_t>(pick(static_cast<int>(apps_.size())));
    ASSERT_TRUE(s_->removeApp(apps_[i]).isOk());
    model_apps_.erase(apps_[i]);
    for (auto& c : all_) {
      if (c.app == apps_[i]) c.alive = false;
    }
    apps_.erase(apps_.begin() + static_cast<std::ptrdiff_t>(i));
  }

  void updateAsks() {
    if (apps_.empty()) return;
    const AppId& a = apps_[static_cast<size_t>(pick(static_cast<int>(apps_.size())))];
    ResourceRequest r;
    r.request_id = pick(2) == 0 ? "p0" : "p1";
    r.priority = r.request_id == "p0" ? 0 : 1;
    r.capability = shape();
    r.count = pick(7) * scale_;
    ASSERT_TRUE(s_->updateAsks(a, {r}).isOk());
    model_apps_[a].asks[r.request_id] = {r.capability, r.count};
  }

  void recoverAm() {
    if (apps_.empty()) return;
    Allocation al;
    al.container = ContainerId("am" + std::to_string(next_am_++));
    al.app = apps_[static_cast<size_t>(pick(static_cast<int>(apps_.size())))];
    al.node = nodes_[static_cast<size_t>(pick(static_cast<int>(nodes_.size())))];
    al.resource = Resource(1024, 1);
    al.am = pick(3) != 0;  // now and then a recovered task container, preemptable
    ASSERT_TRUE(s_->recoverContainer(al).isOk());
    all_.push_back(ModelContainer{al.container, al.app, app_res_[al.app], al.resource, al.am, false,
                                  true, al.node, TimePoint(), false});
  }

  void complete(ModelContainer& c) {
    ASSERT_TRUE(s_->containerCompleted(c.id).isOk());
    c.alive = false;
  }

  void completeOne() {
    std::vector<ModelContainer*> alive;
    for (auto& c : all_) {
      if (c.alive) alive.push_back(&c);
    }
    if (!alive.empty()) complete(*alive[static_cast<size_t>(pick(static_cast<int>(alive.size())))]);
  }

  void completeKilled() {
    for (const auto& id : killed_) {
      for (auto& c : all_) {
        if (c.id == id && c.alive) complete(c);
      }
    }
    killed_.clear();
  }

  // The victims `want` (the reference's) against the notices taken by slot:
  // per app, the same number, on the same nodes, in the same order.
  void beatBySlot(const std::vector<ContainerId>& want) {
    std::vector<SlotNotice> taken;
    s_->takePreemptionNotices(&taken);
    EXPECT_EQ(s_->numUntakenNotices(), 0);
    ASSERT_EQ(taken.size(), want.size());
    for (const auto& a : apps_) {
      const AppSlot slot = s_->appSlot(a).value();
      std::vector<ModelContainer*> want_app;
      for (const auto& id : want) {
        for (auto& c : all_) {
          if (c.id == id && c.app == a) want_app.push_back(&c);
        }
      }
      size_t i = 0;
      for (const auto& n : taken) {
        if (!(n.app == slot)) continue;
        ASSERT_LT(i, want_app.size()) << "app " << a.value();
        EXPECT_EQ(n.node.value, s_->nodeSlot(want_app[i]->node).value().value) << a.value();
        EXPECT_EQ(n.deadline, now_ + Millis(2000));
        want_app[i]->noticed = true;
        want_app[i]->deadline = n.deadline;
        i++;
      }
      EXPECT_EQ(i, want_app.size()) << "app " << a.value();
    }
    victims_ += static_cast<int64_t>(taken.size());
  }

  void beat() {
    const NodeId& n = nodes_[static_cast<size_t>(pick(static_cast<int>(nodes_.size())))];
    // Kills come first in a heartbeat, before any grant.
    const std::vector<ContainerId> want_kills =
        referenceKills(all_, accounts(*s_, all_, model_apps_, nodes_, kNodeTotal), n, now_);
    auto r = s_->nodeUpdate(n, now_);
    ASSERT_TRUE(r.isOk());
    for (const auto& a : r->allocations) {
      model_apps_.at(a.app).asks.at(a.request_id).second--;
      all_.push_back(ModelContainer{a.container, a.app, app_res_[a.app], a.resource, false, false,
                                    true, a.node, TimePoint(), false});
    }
    std::vector<ContainerId> kills;
    for (const auto& k : r->to_kill) kills.push_back(k.container);
    ASSERT_EQ(kills, want_kills);
    killed_.insert(killed_.end(), kills.begin(), kills.end());
    kills_ += static_cast<int64_t>(kills.size());
    const Accounts now_accounts = accounts(*s_, all_, model_apps_, nodes_, kNodeTotal);
    max_starved_ = std::max(max_starved_, static_cast<int64_t>(now_accounts.starved.size()));
    std::vector<ContainerId> want = referenceVictims(all_, now_accounts);
    std::vector<ContainerId> got;
    std::vector<PreemptionNotice> notices;
    if (by_slot_) {
      beatBySlot(want);
      return;
    }
    for (const auto& a : apps_) {
      std::vector<ContainerId> per_app;
      for (const auto& notice : s_->takePreemptionNotices(a)) {
        per_app.push_back(notice.container);
        notices.push_back(notice);
      }
      // Within an app, notices come in selection order: the reference's order.
      std::vector<ContainerId> want_app;
      for (const auto& id : want) {
        for (const auto& c : all_) {
          if (c.id == id && c.app == a) want_app.push_back(id);
        }
      }
      EXPECT_EQ(per_app, want_app) << "app " << a.value();
      got.insert(got.end(), per_app.begin(), per_app.end());
    }
    std::sort(got.begin(), got.end());
    std::sort(want.begin(), want.end());
    ASSERT_EQ(got, want);
    std::map<ContainerId, TimePoint> deadlines;
    for (const auto& p : notices) deadlines[p.container] = p.deadline;
    for (const auto& id : got) {
      for (auto& c : all_) {
        if (c.id != id) continue;
        c.noticed = true;
        c.deadline = deadlines.at(id);
      }
    }
    victims_ += static_cast<int64_t>(got.size());
  }

 public:
  int64_t victims_ = 0;
  int64_t kills_ = 0;
  int64_t max_starved_ = 0;  // the most starved reservations at one heartbeat

 private:
  std::mt19937 rng_;
  int scale_ = 1;
  bool by_slot_ = false;
  std::unique_ptr<Scheduler> s_;
  TimePoint now_ = fromEpochMs(1'800'000'000'000);
  std::vector<NodeId> nodes_;
  std::vector<ReservationId> reservations_;
  std::vector<AppId> apps_;
  std::map<AppId, ReservationId> app_res_;
  std::map<AppId, ModelApp> model_apps_;  // apps not removed
  std::vector<ModelContainer> all_;       // allocation (and recovery) order
  std::vector<ContainerId> killed_;
  int next_app_ = 0, next_am_ = 0;
};

// On random instances (nodes, ad-hoc and reservation apps, guarantees that
// rise and fall, AM and recovered containers, completions), every heartbeat
// selects exactly the victims of the original full walk, in the same order,
// and kills exactly the noticed containers the re-check rule still needs.
TEST(SchedulerPreemptionTest, SameVictimsAsFullWalkOnRandomInstances) {
  int64_t victims = 0, kills = 0;
  for (uint32_t seed = 1; seed <= 150; seed++) {
    Instance inst(seed);
    for (int i = 0; i < 300 && !::testing::Test::HasFatalFailure(); i++) inst.step();
    ASSERT_FALSE(::testing::Test::HasFatalFailure()) << "seed " << seed;
    victims += inst.victims_;
    kills += inst.kills_;
  }
  // The instances must exercise preemption, or the comparison proves nothing;
  // some notices are withdrawn (fewer kills than victims), most are not.
  EXPECT_GT(victims, 500);
  EXPECT_GT(kills, victims / 4);
  EXPECT_LT(kills, victims);
}

// The same on clusters of 60 to 139 nodes, where most nodes are full: the
// scheduler's cover pass visits only the nodes that may have room
// (RoomSlots, several bitset words), the reference walks every node.
TEST(SchedulerPreemptionTest, SameVictimsWithManyMostlyFullNodes) {
  int64_t victims = 0;
  for (uint32_t seed = 1; seed <= 30; seed++) {
    Instance inst(seed, 60, 80, 25);
    for (int i = 0; i < 600 && !::testing::Test::HasFatalFailure(); i++) inst.step();
    ASSERT_FALSE(::testing::Test::HasFatalFailure()) << "seed " << seed;
    victims += inst.victims_;
  }
  EXPECT_GT(victims, 100);
}

// The same on 200 to 259 nodes (four words of RoomSlots) with six
// reservations of four shapes: the kill re-check's walk takes a word (or a
// block of 8 slots) whole from the placements it remembers for the starved
// shapes and the word's rooms (WordPlace), and must kill exactly what the
// reference's node-by-node walk kills as rooms change between re-checks.
TEST(SchedulerPreemptionTest, SameKillsWithManyStarvedShapesOverManyWords) {
  int64_t victims = 0, kills = 0;
  for (uint32_t seed = 1; seed <= 8; seed++) {
    Instance inst(seed, 200, 60, 60, 6);
    for (int i = 0; i < 400 && !::testing::Test::HasFatalFailure(); i++) inst.step(20);
    ASSERT_FALSE(::testing::Test::HasFatalFailure()) << "seed " << seed;
    victims += inst.victims_;
    kills += inst.kills_;
  }
  EXPECT_GT(victims, 200);
  EXPECT_GT(kills, 50);
  EXPECT_LT(kills, victims);
}

// The same with 40 reservations of four shapes and 200 apps on 100 to 129
// nodes (up to 16 reservations starved at once): the re-check's walk groups the open starved
// reservations by shape and offers a node only each group's first (OpenGroups), several of one
// shape closing on one node; it must kill exactly what the reference's
// walk over every reservation in order kills.
TEST(SchedulerPreemptionTest, SameKillsWithManyStarvedReservationsOfFewShapes) {
  int64_t victims = 0, kills = 0, max_starved = 0;
  for (uint32_t seed = 1; seed <= 6; seed++) {
    Instance inst(seed, 100, 30, 60, 40, false, 200);
    for (int i = 0; i < 300 && !::testing::Test::HasFatalFailure(); i++) inst.step(20);
    ASSERT_FALSE(::testing::Test::HasFatalFailure()) << "seed " << seed;
    victims += inst.victims_;
    kills += inst.kills_;
    max_starved = std::max(max_starved, inst.max_starved_);
  }
  EXPECT_GT(max_starved, 12);  // many reservations per shape at once
  EXPECT_GT(victims, 200);
  EXPECT_GT(kills, 50);
  EXPECT_LT(kills, victims);
}

// The same instances with the notices taken by slot, for every app at once
// (what the simulator does): each app's notices are the reference's
// victims of that app, on their nodes, in selection order, and none is left.
TEST(SchedulerPreemptionTest, NoticesBySlotAreThePerAppNotices) {
  int64_t victims = 0;
  for (uint32_t seed = 1; seed <= 60; seed++) {
    Instance inst(seed, 2, 4, 1, 3, /*by_slot=*/true);
    for (int i = 0; i < 300 && !::testing::Test::HasFatalFailure(); i++) inst.step();
    ASSERT_FALSE(::testing::Test::HasFatalFailure()) << "seed " << seed;
    victims += inst.victims_;
  }
  EXPECT_GT(victims, 200);
}

}  // namespace
}  // namespace morpheus::sched
