// TEST ORACLE, not product code: the scheduler core as it was before the
// pending-ask index (the scale work), copied verbatim
// from src/scheduler/scheduler.{h,cc} with only the namespace changed
// (morpheus::sched::reference). Every heartbeat of this copy walks the heaps
// into every app with demand; ask_index_diff_test.cc drives it and the real
// Scheduler with the same calls and requires identical results. Do not
// "improve" it: it is the old behaviour the index must reproduce. One later
// change is ported, since it is a rule and not an index: the re-check of a
// notice at its deadline (collectKills / stillNeeded / withdraw).
#include "reference_scheduler.h"

#include <algorithm>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>

namespace morpheus::sched::reference {

namespace {

Resource clampZero(const Resource& r) { return Resource::max(r, Resource()); }

struct Container;
struct Entity;
struct App;
struct Node;

// Intrusive doubly-linked list membership: a container is on its node's list,
// its app's list and the global allocation-order list without extra
// allocations, and leaves each in O(1).
struct Link {
  Container* prev = nullptr;
  Container* next = nullptr;
};

struct Container {
  ContainerId id;
  App* app = nullptr;
  Node* node = nullptr;
  Resource resource;
  int32_t priority = 0;
  std::string request_id;
  bool am = false;                  // an AM container: never preempted
  bool preempting = false;          // a notice went out
  bool kill_sent = false;           // returned in a to_kill list
  uint64_t order = 0;               // allocation (or recovery) order: the newer, the larger
  struct Source* source = nullptr;  // its reservation's candidates of its shape (null: ad hoc)
  TimePoint kill_deadline;
  // cand_link: on its owner's list of preemption candidates (not an AM, not
  // under notice) — Reservation::cands or Impl::adhoc_cands.
  Link node_link, app_link, cand_link;
};

template <Link Container::*L>
struct CList {
  Container* head = nullptr;
  Container* tail = nullptr;
  size_t size = 0;

  void pushBack(Container* c) {
    (c->*L).prev = tail;
    (c->*L).next = nullptr;
    if (tail != nullptr) {
      (tail->*L).next = c;
    } else {
      head = c;
    }
    tail = c;
    size++;
  }
  void erase(Container* c) {
    Link& l = c->*L;
    if (l.prev != nullptr) {
      (l.prev->*L).next = l.next;
    } else {
      head = l.next;
    }
    if (l.next != nullptr) {
      (l.next->*L).prev = l.prev;
    } else {
      tail = l.prev;
    }
    l.prev = l.next = nullptr;
    size--;
  }
  // Puts `c` back in its allocation-order place (the list is in `order`),
  // found from the tail: O(members newer than `c`).
  void insertByOrder(Container* c) {
    Container* after = tail;
    while (after != nullptr && after->order > c->order) after = (after->*L).prev;
    Container* before = after != nullptr ? (after->*L).next : head;
    (c->*L).prev = after;
    (c->*L).next = before;
    if (after != nullptr) {
      (after->*L).next = c;
    } else {
      head = c;
    }
    if (before != nullptr) {
      (before->*L).prev = c;
    } else {
      tail = c;
    }
    size++;
  }
};

// Heap key: tier first (periodic before one-off), then the policy score, then
// creation order — a total order, so the top is deterministic whatever the
// heap's internal layout.
struct Key {
  int tier = 0;
  double score = 0;
  uint64_t seq = 0;
  bool operator<(const Key& o) const {
    return std::tie(tier, score, seq) < std::tie(o.tier, o.score, o.seq);
  }
};

// Heap slots: an entity can sit in its parent's child heap (kParent) and, for
// reservation queues, in the guaranteed phase heap and the overage phase heap.
enum Slot { kParent = 0, kGuaranteed = 1, kOverage = 2, kSlots = 3 };

// Indexed binary min-heap of entities; each entity knows its position per
// slot, so update/erase are O(log n) without searching or allocating.
class EntityHeap {
 public:
  explicit EntityHeap(Slot slot) : slot_(slot) {}
  Slot slot() const { return slot_; }
  bool empty() const { return v_.empty(); }
  size_t size() const { return v_.size(); }
  Entity* top() const { return v_.front().e; }
  const Key& topKey() const { return v_.front().key; }
  Entity* at(size_t i) const { return v_[i].e; }
  void push(Entity* e, Key k);
  void erase(Entity* e);
  void update(Entity* e, Key k);

 private:
  struct Item {
    Key key;
    Entity* e;
  };
  void set(size_t i, Item it);
  void siftUp(size_t i);
  void siftDown(size_t i);
  Slot slot_;
  std::vector<Item> v_;
};

enum class Kind : uint8_t { kQueue, kUser, kApp, kReservation };

// A node of the scheduling tree: ad-hoc queue, user (inside a leaf), app, or
// reservation queue. `used` includes all descendants.
struct Entity {
  Entity(Kind k, Entity* p, uint64_t s) : kind(k), parent(p), seq(s) {}
  Kind kind;
  Entity* parent;  // null for the ad-hoc root and reservation queues
  uint64_t seq;    // creation order: the tie-break
  double weight = 1.0;
  Resource used;
  int32_t demand_children = 0;  // children with has_demand
  bool has_demand = false;
  EntityHeap children{kParent};  // children with demand, by policy score
  int32_t pos[kSlots] = {-1, -1, -1};
  bool skipped[kSlots] = {false, false, false};  // out of the heap for the current phase
};

struct User;
struct Queue : Entity {
  using Entity::Entity;
  std::string path;
  bool leaf = true;
  std::map<UserId, std::unique_ptr<User>> users;  // leaves only
};

struct User : Entity {
  using Entity::Entity;
  UserId id;
  Queue* leaf = nullptr;
  int32_t apps = 0;
};

// A reservation's preemption candidates of one shape, in allocation order.
// All of them pass or fail the "only what is beyond the guarantee" check
// together, so a selection takes or skips the list as a whole.
struct Reservation;
struct Source {
  Reservation* owner = nullptr;
  Resource shape;
  CList<&Container::cand_link> cands;
  uint64_t key = 0;  // its key in Impl::lenders (its newest candidate's order), 0 = not there
};

struct Reservation : Entity {
  using Entity::Entity;
  ReservationId id;
  ReservationKind rkind = ReservationKind::kOneOff;
  Resource guarantee;
  Resource demand;      // pending asks of its apps
  Resource preempting;  // its own containers under a preemption notice
  int32_t apps = 0;
  bool removed = false;  // removeReservation called; lingers for its apps
  // Preemption bookkeeping (Impl::syncPreemption keeps it current):
  std::vector<std::unique_ptr<Source>> sources;  // its candidates, one list per shape
  Resource need;                                 // its share of Impl::need_total
  Resource tentative;  // scratch of selectVictims: its candidates taken, not yet marked
};

struct Ask {
  ResourceRequest req;   // req.count = containers still wanted
  bool waiting = false;  // passed over on a node not matching its soft constraints
  TimePoint wait_since;
};

struct App : Entity {
  using Entity::Entity;
  AppId id;
  UserId user_id;
  User* user = nullptr;
  Reservation* res = nullptr;
  std::vector<Ask> asks;  // sorted by (priority, request_id)
  int64_t pending = 0;    // sum of ask counts
  CList<&Container::app_link> containers;
  std::vector<PreemptionNotice> notices;
};

struct Node {
  NodeId id;
  Resource total, used, free;
  std::map<std::string, std::string> attrs;
  CList<&Container::node_link> containers;
  int32_t marked = 0;       // containers under preemption notice, not yet sent to kill
  Resource noticed;         // containers under preemption notice, until they end (kills included)
  Resource rem, tentative;  // scratch of the preemption pass (cover, selectVictims)
  Resource hold;            // the starved containers its notices make room for
  std::vector<Container*> taken;
};

// A reservation below its guarantee with demand, in containers of its
// largest pending need (`shape`): `uncovered` of them have no room yet.
struct Starved {
  Reservation* r;
  Resource shape;
  int64_t uncovered;
};

void EntityHeap::set(size_t i, Item it) {
  it.e->pos[slot_] = static_cast<int32_t>(i);
  v_[i] = it;
}

void EntityHeap::siftUp(size_t i) {
  Item it = v_[i];
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (!(it.key < v_[p].key)) break;
    set(i, v_[p]);
    i = p;
  }
  set(i, it);
}

void EntityHeap::siftDown(size_t i) {
  Item it = v_[i];
  size_t n = v_.size();
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && v_[c + 1].key < v_[c].key) c++;
    if (!(v_[c].key < it.key)) break;
    set(i, v_[c]);
    i = c;
  }
  set(i, it);
}

void EntityHeap::push(Entity* e, Key k) {
  v_.push_back({k, e});
  siftUp(v_.size() - 1);
}

void EntityHeap::erase(Entity* e) {
  size_t i = static_cast<size_t>(e->pos[slot_]);
  e->pos[slot_] = -1;
  Item last = v_.back();
  v_.pop_back();
  if (i == v_.size()) return;
  set(i, last);
  siftDown(i);
  siftUp(static_cast<size_t>(last.e->pos[slot_]));
}

void EntityHeap::update(Entity* e, Key k) {
  size_t i = static_cast<size_t>(e->pos[slot_]);
  v_[i].key = k;
  siftDown(i);
  siftUp(static_cast<size_t>(e->pos[slot_]));
}

// Hash of a string id for the scheduler's lookup tables. Deliberately not
// noexcept: libstdc++ then stores each element's hash code, so a lookup
// neither rehashes the chain's keys to find the bucket's end nor compares
// keys whose codes differ (with the noexcept std::hash<StrongId>, hashing
// the container ids took a large share of a simulated heartbeat).
template <typename Id>
struct StoredHash {
  size_t operator()(const Id& id) const { return std::hash<std::string>()(id.value()); }
};

bool validResource(const Resource& r) { return !r.anyNegative() && !r.isZero(); }

bool matches(const PlacementConstraint& c, const std::map<std::string, std::string>& attrs) {
  auto it = attrs.find(c.key);
  if (it == attrs.end()) return false;
  if (c.values.empty()) return true;
  return std::find(c.values.begin(), c.values.end(), it->second) != c.values.end();
}

bool askOrder(const Ask& a, const Ask& b) {
  return std::tie(a.req.priority, a.req.request_id) < std::tie(b.req.priority, b.req.request_id);
}

Status validatePath(const std::string& path, const std::string& field) {
  if (path != "root" && path.rfind("root.", 0) != 0)
    return invalidArgument(field, "'" + path + "' must start at root");
  if (path.back() == '.' || path.find("..") != std::string::npos) {
    return invalidArgument(field, "'" + path + "' has an empty segment");
  }
  return Status::ok();
}

}  // namespace

struct Scheduler::Impl {
  enum class Phase { kGuaranteed, kAdhoc, kOverage };

  Impl(SchedulerOptions o, std::shared_ptr<const QueueOrderingPolicy> p)
      : opts(std::move(o)), policy(std::move(p)) {}

  const SchedulerOptions opts;
  const std::shared_ptr<const QueueOrderingPolicy> policy;

  std::map<NodeId, Node> nodes;
  Resource cluster_total, cluster_used;
  std::map<std::string, std::unique_ptr<Queue>> queues;  // by path
  Queue* root = nullptr;
  std::map<ReservationId, std::unique_ptr<Reservation>> reservations;
  std::unordered_map<AppId, std::unique_ptr<App>, StoredHash<AppId>>
      apps;  // lookup only: never iterated for decisions
  std::unordered_map<ContainerId, Container, StoredHash<ContainerId>>
      containers;  // stable element addresses
  // Preemption candidates of ad-hoc apps (no reservation), allocation order.
  CList<&Container::cand_link> adhoc_cands;
  // Sum over reservations below their guarantee with demand (the guaranteed
  // heap) of min(demand, guarantee - used): what preemption must make room for.
  Resource need_total;
  // Sources that may lend a container: of a reservation not below its
  // guarantee with demand, non-empty, and whose shape the reservation can
  // spare net of containers already under notice; by the allocation order of
  // their newest candidate.
  std::set<std::pair<uint64_t, Source*>> lenders;
  uint64_t order_seq = 0;
  std::vector<Container*> victim_heap;      // scratch of selectVictims
  std::vector<Reservation*> victim_owners;  // scratch of selectVictims
  std::vector<Node*> victim_nodes;          // scratch of selectVictims
  mutable std::vector<Starved> starved;     // scratch of cover and selectVictims
  EntityHeap guaranteed{kGuaranteed};       // reservations below guarantee with demand
  EntityHeap overage{kOverage};             // reservations with demand
  std::map<std::pair<int64_t, int64_t>, int64_t> shapes;  // (MiB, vcores) of pending asks -> #asks
  std::vector<std::pair<EntityHeap*, Entity*>> skipped;   // scratch of the current phase
  uint64_t entity_seq = 0;
  uint64_t id_seq = 0;

  // ---- keys and heap membership ----

  Key key(Entity* e, Slot s) const {
    if (s == kParent) return Key{0, policy->score(e->used, e->weight, cluster_total), e->seq};
    auto* r = static_cast<Reservation*>(e);
    int tier = r->rkind == ReservationKind::kPeriodic ? 0 : 1;
    if (s == kGuaranteed) return Key{tier, r->used.dominantShare(r->guarantee), e->seq};
    return Key{tier, policy->score(e->used, 1.0, cluster_total), e->seq};
  }

  EntityHeap* heapOf(Entity* e, Slot s) {
    if (s == kParent) return e->parent != nullptr ? &e->parent->children : nullptr;
    if (e->kind != Kind::kReservation) return nullptr;
    return s == kGuaranteed ? &guaranteed : &overage;
  }

  bool wants(Entity* e, Slot s) const {
    if (!e->has_demand) return false;
    if (s == kGuaranteed) {
      auto* r = static_cast<Reservation*>(e);
      return !r->guarantee.fitsIn(r->used);
    }
    return true;
  }

  // Puts `e` in, out of, or at its new key in the heap of slot `s`. Entities
  // skipped in the current phase are left alone: restoreSkipped re-places them.
  void place(Entity* e, Slot s) {
    EntityHeap* h = heapOf(e, s);
    if (h == nullptr || e->skipped[s]) return;
    bool want = wants(e, s);
    if (want) {
      if (e->pos[s] >= 0) {
        h->update(e, key(e, s));
      } else {
        h->push(e, key(e, s));
      }
    } else if (e->pos[s] >= 0) {
      h->erase(e);
    }
  }

  // After `e`'s usage or demand changed: fixes demand flags, keys and heap
  // membership from `e` up to its top.
  void refresh(Entity* e) {
    for (; e != nullptr; e = e->parent) {
      bool demand =
          e->kind == Kind::kApp ? static_cast<App*>(e)->pending > 0 : e->demand_children > 0;
      if (demand != e->has_demand) {
        e->has_demand = demand;
        if (e->parent != nullptr) e->parent->demand_children += demand ? 1 : -1;
      }
      for (int s = 0; s < kSlots; s++) place(e, static_cast<Slot>(s));
      if (e->kind == Kind::kReservation) syncPreemption(static_cast<Reservation*>(e));
    }
  }

  // ---- preemption bookkeeping (kept current so a heartbeat with no
  // shortfall costs O(1) and a selection visits only possible victims) ----

  CList<&Container::cand_link>& candsOf(Container* c) {
    return c->source != nullptr ? c->source->cands : adhoc_cands;
  }

  // The candidate list of `r` for containers of `shape` (created on first use;
  // a reservation's apps use few shapes).
  Source* sourceOf(Reservation* r, const Resource& shape) {
    for (auto& src : r->sources) {
      if (src->shape == shape) return src.get();
    }
    r->sources.push_back(std::make_unique<Source>());
    r->sources.back()->owner = r;
    r->sources.back()->shape = shape;
    return r->sources.back().get();
  }

  // The old per-container check: `r` stays within its guarantee without a
  // container of `shape` (and those already under notice).
  static bool canSpare(const Reservation* r, const Resource& shape) {
    return r->guarantee.fitsIn(r->used - r->preempting - shape);
  }

  // Re-derives r's share of need_total and whether it is a lender from its
  // guarantee, usage, demand, notices and candidates. Called whenever one of
  // them changed (refresh, and after a selection marked its containers).
  // Membership of the guaranteed heap is wants(r, kGuaranteed), which holds
  // whenever no phase is running (the heap then has no skipped entities).
  void syncPreemption(Reservation* r) {
    const bool below = wants(r, kGuaranteed);
    Resource need =
        below ? Resource::min(r->demand, clampZero(r->guarantee - r->used)) : Resource();
    if (!(need == r->need)) {
      need_total -= r->need;
      need_total += need;
      r->need = std::move(need);
    }
    for (auto& src : r->sources) {
      const bool lends = !below && src->cands.head != nullptr && canSpare(r, src->shape);
      const uint64_t key = lends ? src->cands.tail->order : 0;
      if (key == src->key) continue;
      if (src->key != 0) lenders.erase({src->key, src.get()});
      if (key != 0) lenders.emplace(key, src.get());
      src->key = key;
    }
  }

  // The cluster total changed: every score may have.
  void rekeyAll() {
    auto rekey = [this](Entity* e) {
      for (int s = 0; s < kSlots; s++) {
        EntityHeap* h = heapOf(e, static_cast<Slot>(s));
        if (h != nullptr && e->pos[s] >= 0) h->update(e, key(e, static_cast<Slot>(s)));
      }
    };
    for (auto& [path, q] : queues) {
      rekey(q.get());
      for (auto& [uid, u] : q->users) rekey(u.get());
    }
    for (auto& [id, r] : reservations) rekey(r.get());
    for (auto& [id, a] : apps) rekey(a.get());
  }

  void addUsed(App* a, const Resource& r) {
    for (Entity* e = a; e != nullptr; e = e->parent) e->used += r;
  }
  void subUsed(App* a, const Resource& r) {
    for (Entity* e = a; e != nullptr; e = e->parent) e->used -= r;
  }

  // ---- asks ----

  void addShape(const Resource& c) { shapes[{c.memoryMib(), c.vcores()}]++; }
  void removeShape(const Resource& c) {
    auto it = shapes.find({c.memoryMib(), c.vcores()});
    if (it != shapes.end() && --it->second == 0) shapes.erase(it);
  }
  // Cheap pre-check: could any pending ask fit in `free`? (Extended resources
  // are checked later, per ask.)
  bool anyShapeFits(const Resource& free) const {
    for (const auto& [shape, n] : shapes) {
      if (shape.first <= free.memoryMib() && shape.second <= free.vcores()) return true;
    }
    return false;
  }

  void changeDemand(App* a, const Resource& cap, int64_t delta) {
    a->pending += delta;
    if (a->res != nullptr) {
      if (delta >= 0) {
        a->res->demand += cap * delta;
      } else {
        a->res->demand -= cap * (-delta);
      }
    }
  }

  // The first ask of `a` (priority order) that can be placed on `n` in
  // `phase`, or -1.
  int findAsk(App* a, Node& n, Phase phase, TimePoint now) {
    for (size_t i = 0; i < a->asks.size(); i++) {
      Ask& ask = a->asks[i];
      const ResourceRequest& r = ask.req;
      int32_t g = std::max(1, r.gang_size);
      Resource need = g > 1 ? r.capability * g : r.capability;
      if (!need.fitsIn(n.free)) continue;
      bool hard_ok = true;
      bool soft_ok = true;
      for (const auto& c : r.constraints) {
        bool m = matches(c, n.attrs);
        if (c.hard && !m) hard_ok = false;
        if (!c.hard && !m) soft_ok = false;
      }
      if (!hard_ok) continue;
      if (!soft_ok) {
        if (!ask.waiting) {
          ask.waiting = true;
          ask.wait_since = now;
        }
        if (now - ask.wait_since < opts.soft_constraint_delay) continue;
      }
      if (phase == Phase::kGuaranteed && !(a->res->used + need).fitsIn(a->res->guarantee)) continue;
      return static_cast<int>(i);
    }
    return -1;
  }

  // Descends the heap to the best app with an ask placeable on `n`. Subtrees
  // with nothing placeable are taken out of their heaps for the rest of the
  // phase (restoreSkipped puts them back).
  App* descend(EntityHeap& h, Node& n, Phase phase, TimePoint now, int* ask) {
    while (!h.empty()) {
      Entity* e = h.top();
      if (e->kind == Kind::kApp) {
        *ask = findAsk(static_cast<App*>(e), n, phase, now);
        if (*ask >= 0) return static_cast<App*>(e);
      } else if (App* a = descend(e->children, n, phase, now, ask)) {
        return a;
      }
      h.erase(e);
      e->skipped[h.slot()] = true;
      skipped.emplace_back(&h, e);
    }
    return nullptr;
  }

  void restoreSkipped() {
    for (auto it = skipped.rbegin(); it != skipped.rend(); ++it) {
      Slot s = it->first->slot();
      it->second->skipped[s] = false;
      place(it->second, s);
    }
    skipped.clear();
  }

  // ---- containers ----

  Allocation toAllocation(const Container& c) const {
    Allocation a;
    a.container = c.id;
    a.app = c.app->id;
    a.node = c.node->id;
    a.resource = c.resource;
    a.priority = c.priority;
    a.request_id = c.request_id;
    if (c.app->res != nullptr) a.reservation = c.app->res->id;
    a.am = c.am;
    return a;
  }

  Container* insertContainer(const ContainerId& id, App* a, Node& n, const Resource& r,
                             int32_t priority, const std::string& request_id, bool am) {
    auto [it, ok] = containers.try_emplace(id);
    if (!ok) return nullptr;
    Container& c = it->second;
    c.id = id;
    c.app = a;
    c.node = &n;
    c.resource = r;
    c.priority = priority;
    c.request_id = request_id;
    c.am = am;
    c.order = ++order_seq;
    n.containers.pushBack(&c);
    a->containers.pushBack(&c);
    if (a->res != nullptr) c.source = sourceOf(a->res, r);
    if (!am) candsOf(&c).pushBack(&c);
    n.used += r;
    n.free -= r;
    cluster_used += r;
    addUsed(a, r);
    return &c;
  }

  ContainerId nextId(const App* a) {
    std::string s = a->id.value();
    s += '_';
    s += std::to_string(opts.container_id_epoch);
    s += '_';
    s += std::to_string(++id_seq);
    return ContainerId(std::move(s));
  }

  // Grants one container (or one gang) of `a->asks[idx]` on `n`.
  void grant(App* a, int idx, Node& n, NodeUpdateResult& out) {
    Ask& ask = a->asks[static_cast<size_t>(idx)];
    int32_t g = std::max(1, ask.req.gang_size);
    for (int32_t i = 0; i < g; i++) {
      Container* c = nullptr;
      while (c == nullptr) {
        c = insertContainer(nextId(a), a, n, ask.req.capability, ask.req.priority,
                            ask.req.request_id, false);
      }
      out.allocations.push_back(toAllocation(*c));
    }
    ask.req.count -= g;
    // Delay scheduling: the wait ends when the ask is served where it
    // prefers; after a wait expired, its remaining containers go anywhere.
    if (ask.waiting &&
        std::all_of(ask.req.constraints.begin(), ask.req.constraints.end(),
                    [&n](const PlacementConstraint& c) { return c.hard || matches(c, n.attrs); })) {
      ask.waiting = false;
    }
    changeDemand(a, ask.req.capability, -g);
    if (ask.req.count == 0) {
      removeShape(ask.req.capability);
      a->asks.erase(a->asks.begin() + idx);
    }
    refresh(a);
  }

  // Takes `c` out of every account and the container map.
  Allocation freeContainer(Container* c) {
    Allocation out = toAllocation(*c);
    App* a = c->app;
    Node* n = c->node;
    n->containers.erase(c);
    a->containers.erase(c);
    if (!c->preempting && !c->am) candsOf(c).erase(c);
    n->used -= c->resource;
    n->free += c->resource;
    cluster_used -= c->resource;
    subUsed(a, c->resource);
    if (c->preempting) {
      n->noticed -= c->resource;
      if (a->res != nullptr) a->res->preempting -= c->resource;
      if (!c->kill_sent) n->marked--;
      dropNotice(c);
    }
    containers.erase(c->id);
    refresh(a);
    return out;
  }

  // ---- scheduling ----

  void runPhase(Phase phase, EntityHeap& h, Node& n, TimePoint now, NodeUpdateResult& out) {
    int ask = -1;
    while (!h.empty() && anyShapeFits(n.free)) {
      App* a = descend(h, n, phase, now, &ask);
      if (a == nullptr) break;
      grant(a, ask, n, out);
    }
    restoreSkipped();
  }

  // SchedulerOptions::borrowing_reservations_share: the top-level ad-hoc
  // queues and the reservation queues (beyond their guarantee) as siblings,
  // the smaller policy score first (reservations at weight 1, periodic and
  // one-off alike), then creation order.
  void runShared(Node& n, TimePoint now, NodeUpdateResult& out) {
    EntityHeap& adhoc = root->children;
    int ask = -1;
    while (anyShapeFits(n.free) && (!adhoc.empty() || !overage.empty())) {
      EntityHeap* h = &adhoc;
      if (adhoc.empty()) {
        h = &overage;
      } else if (!overage.empty()) {
        const Key& a = adhoc.topKey();
        const Key& o = overage.topKey();
        if (std::tie(o.score, o.seq) < std::tie(a.score, a.seq)) h = &overage;
      }
      Entity* e = h->top();
      App* app = descend(e->children, n, h == &adhoc ? Phase::kAdhoc : Phase::kOverage, now, &ask);
      if (app == nullptr) {
        h->erase(e);
        e->skipped[h->slot()] = true;
        skipped.emplace_back(h, e);
        continue;
      }
      grant(app, ask, n, out);
    }
    restoreSkipped();
  }

  // The containers of `n` whose grace ended by `now`, in the node's
  // allocation order: killed if still needed (stillNeeded), else their notice
  // is withdrawn.
  void collectKills(Node& n, TimePoint now, NodeUpdateResult& out) {
    if (n.marked == 0) return;
    for (Container* c = n.containers.head; c != nullptr; c = c->node_link.next) {
      if (!c->preempting || c->kill_sent || c->kill_deadline > now) continue;
      if (!stillNeeded(c)) {
        withdraw(c);
        continue;
      }
      c->kill_sent = true;
      n.marked--;
      out.to_kill.push_back(toAllocation(*c));
    }
  }

  // Whether noticed `c` must still make room: its reservation (if any) stays
  // within its guarantee without it, and preemptIfNeeded's shortfall would not
  // be covered without its notice (the other notices, killed or not, count).
  bool stillNeeded(const Container* c) const {
    const Reservation* r = c->app->res;
    if (r != nullptr && !r->guarantee.fitsIn(r->used - r->preempting)) return false;
    return !need_total.isZero() && cover(c) > 0;
  }

  // Undoes mark(c) as if no notice had been sent: `c` is a candidate again.
  // The AM is not told (notices are advisory); one not yet taken is dropped.
  void withdraw(Container* c) {
    App* a = c->app;
    c->preempting = false;
    c->kill_deadline = TimePoint();
    c->node->marked--;
    c->node->noticed -= c->resource;
    candsOf(c).insertByOrder(c);
    dropNotice(c);
    if (a->res == nullptr) return;
    a->res->preempting -= c->resource;
    syncPreemption(a->res);
  }

  void dropNotice(const Container* c) {
    auto& ns = c->app->notices;
    ns.erase(std::remove_if(ns.begin(), ns.end(),
                            [c](const PreemptionNotice& p) { return p.container == c->id; }),
             ns.end());
  }

  // ---- preemption (node-aware, after YARN's fair-scheduler preemption,
  // which makes room per node for the starved request) ----

  // How many `shape`s fit in `room` (0 if a dimension of `room` is short).
  static int64_t fitCount(const Resource& room, const Resource& shape) {
    int64_t k = std::numeric_limits<int64_t>::max();
    if (shape.memoryMib() > 0)
      k = std::min(k, std::max<int64_t>(0, room.memoryMib()) / shape.memoryMib());
    if (shape.vcores() > 0) k = std::min(k, std::max<int64_t>(0, room.vcores()) / shape.vcores());
    return k == std::numeric_limits<int64_t>::max() ? 0 : k;
  }

  // How many `shape`s `amount` needs (rounded up).
  static int64_t ceilCount(const Resource& amount, const Resource& shape) {
    int64_t k = 0;
    if (shape.memoryMib() > 0)
      k = std::max(k, (amount.memoryMib() + shape.memoryMib() - 1) / shape.memoryMib());
    if (shape.vcores() > 0)
      k = std::max(k, (amount.vcores() + shape.vcores() - 1) / shape.vcores());
    return k;
  }

  // The guaranteed heap's reservations by creation order, each with the
  // containers the guaranteed phase could still give it: of its largest
  // pending need within its guarantee, as many as its demand asks for and
  // its guarantee holds; the needs are found by walking every app's asks.
  void collectStarved() const {
    starved.clear();
    for (size_t i = 0; i < guaranteed.size(); i++) {
      auto* r = static_cast<Reservation*>(guaranteed.at(i));
      const Resource within = clampZero(r->guarantee - r->used);
      Resource shape;
      for (const auto& [id, a] : apps) {
        if (a->res != r) continue;
        for (const Ask& ask : a->asks) {
          const Resource need = ask.req.capability * std::max(1, ask.req.gang_size);
          if (ask.req.count > 0 && need.fitsIn(within) &&
              std::pair(need.memoryMib(), need.vcores()) >
                  std::pair(shape.memoryMib(), shape.vcores()))
            shape = need;
        }
      }
      if (shape.isZero()) continue;
      starved.push_back(
          Starved{r, shape, std::min(fitCount(within, shape), ceilCount(r->demand, shape))});
    }
    std::sort(starved.begin(), starved.end(),
              [](const Starved& a, const Starved& b) { return a.r->seq < b.r->seq; });
  }

  // Places the starved containers (collectStarved) in `n`'s room left (rem),
  // in order, as many of each as fit. Returns how many it placed.
  int64_t placeStarved(Node& n) const {
    int64_t placed = 0;
    for (Starved& st : starved) {
      if (st.uncovered == 0) continue;
      const int64_t k = std::min(st.uncovered, fitCount(n.rem, st.shape));
      n.rem -= st.shape * k;
      st.uncovered -= k;
      placed += k;
    }
    return placed;
  }

  // Collects the starved reservations and places their containers in every
  // node's room (free plus under notice), nodes in slot order; `without`, if
  // set, is a noticed container whose room is left out. Returns the starved
  // containers left without room. O(nodes x starved reservations).
  int64_t cover(const Container* without = nullptr) const {
    collectStarved();
    int64_t uncovered = 0;
    for (const Starved& st : starved) uncovered += st.uncovered;
    for (const auto& [id, node] : nodes) {
      Node* n = const_cast<Node*>(&node);  // only its scratch is written
      if (uncovered == 0) break;
      n->rem = n->free + n->noticed;
      if (without != nullptr && without->node == n) n->rem -= without->resource;
      uncovered -= placeStarved(*n);
    }
    return uncovered;
  }

  // Reservations below their guarantee whose containers find no room —
  // free or under notice, on a node where the container fits (cover) — take
  // capacity back from borrowers (docs/design/scheduler.md, work conserving). Free
  // fragments no starved container fits count for nothing (they starved a
  // reservation forever before). Approximations: a reservation's need is
  // counted in containers of its largest pending need, and placement
  // constraints are not checked. O(1) without a reservation below its
  // guarantee with demand, O(nodes x starved reservations) with one.
  void preemptIfNeeded(TimePoint now) {
    if (need_total.isZero()) return;
    const int64_t uncovered = cover();
    if (uncovered > 0) selectVictims(uncovered, now);
  }

  // Marks borrowed containers until the `uncovered` starved containers left
  // by cover() have room, visiting candidates newest first over every
  // borrower: an ad-hoc container always; a reservation's container only
  // while the reservation stays within its guarantee without it and those
  // taken before it (only the part beyond the guarantee is borrowed), never
  // one of a reservation below its guarantee with demand, never an AM. A
  // visited container is taken on its node; once the node's room left with
  // what it has taken fits a starved container, the node's taken containers
  // are marked and the starved containers that fit are placed there.
  // Containers taken on a node that never gets such room are spared: killing
  // them would only free room for ad-hoc work to take back. The differential
  // test SchedulerPreemptionTest keeps this walk over every container.
  // Candidates are merged by allocation order from the ad-hoc list and the
  // lending sources (one per reservation and shape), entered lazily newest
  // first from the ordered `lenders`; a source whose shape its reservation
  // can no longer spare is dropped whole. Cost O(visited x (log lenders +
  // starved reservations)).
  void selectVictims(int64_t uncovered, TimePoint now) {
    auto newer = [](const Container* a, const Container* b) { return a->order < b->order; };
    std::vector<Container*>& heap = victim_heap;  // entered sources' next candidates
    heap.clear();
    if (adhoc_cands.tail != nullptr) heap.push_back(adhoc_cands.tail);
    auto fresh = lenders.rbegin();  // sources not entered yet, newest first
    std::vector<Reservation*>& touched = victim_owners;
    touched.clear();
    std::vector<Node*>& nodes_taken = victim_nodes;
    nodes_taken.clear();
    while ((!heap.empty() || fresh != lenders.rend()) && uncovered > 0) {
      Container* c = nullptr;
      if (fresh != lenders.rend() && (heap.empty() || heap.front()->order < fresh->first)) {
        c = fresh->second->cands.tail;
        ++fresh;
      } else {
        std::pop_heap(heap.begin(), heap.end(), newer);
        c = heap.back();
        heap.pop_back();
      }
      Reservation* r = c->app->res;
      if (r != nullptr &&
          !r->guarantee.fitsIn(r->used - r->preempting - r->tentative - c->resource))
        continue;  // the source lends no more
      Container* next = c->cand_link.prev;
      if (next != nullptr) {
        heap.push_back(next);
        std::push_heap(heap.begin(), heap.end(), newer);
      }
      uncovered -= take(c, nodes_taken, touched, now);
    }
    for (Node* n : nodes_taken) {
      n->tentative = Resource();
      n->taken.clear();
    }
    for (Reservation* r : touched) {
      r->tentative = Resource();
      syncPreemption(r);
    }
  }

  // selectVictims takes `c` on its node; if the node's room left then fits a
  // starved container, marks the node's taken containers and places the
  // starved containers that fit. Returns how many it placed.
  int64_t take(Container* c, std::vector<Node*>& nodes_taken, std::vector<Reservation*>& touched,
               TimePoint now) {
    Node& n = *c->node;
    if (n.taken.empty()) nodes_taken.push_back(&n);
    n.taken.push_back(c);
    n.tentative += c->resource;
    Reservation* r = c->app->res;
    if (r != nullptr) {
      if (r->tentative.isZero()) touched.push_back(r);
      r->tentative += c->resource;
    }
    const Resource room = n.rem + n.tentative;
    if (std::none_of(starved.begin(), starved.end(),
                     [&](const Starved& st) { return st.uncovered > 0 && st.shape.fitsIn(room); }))
      return 0;
    for (Container* v : n.taken) {
      if (v->app->res != nullptr) v->app->res->tentative -= v->resource;
      mark(v, now);
    }
    n.taken.clear();
    n.tentative = Resource();
    n.rem = room;
    const int64_t placed = placeStarved(n);
    n.hold += room - n.rem;
    return placed;
  }

  // A preemption notice for `c`: it leaves the candidates and is killed
  // after the grace period.
  void mark(Container* c, TimePoint now) {
    App* a = c->app;
    candsOf(c).erase(c);
    if (a->res != nullptr) a->res->preempting += c->resource;
    c->preempting = true;
    c->kill_deadline = now + opts.preemption_grace;
    c->node->marked++;
    c->node->noticed += c->resource;
    a->notices.push_back(PreemptionNotice{c->id, a->id, c->node->id, c->kill_deadline,
                                          "a reservation reclaims its guaranteed capacity"});
  }

  // Steps 2 and 3 of the order of guarantees: ad-hoc work, and reservations
  // beyond their guarantee (or both as siblings with
  // borrowing_reservations_share). A node making room for starved
  // reservations (containers under notice on it) keeps the free room their
  // containers need (hold, less what the notices will still free) until the
  // notices are killed or withdrawn, as YARN reserves a node for a starved
  // request: given to borrowers, the room a first kill freed made its
  // borrower the newest victim again while the second kill the starved
  // container needed was pending (at grace 0, in a loop). The kept room is
  // taken out of the node's free room for these phases only.
  void runBorrowers(Node& n, TimePoint now, NodeUpdateResult& out) {
    if (n.noticed.isZero()) n.hold = Resource();
    const Resource kept = Resource::min(n.free, clampZero(n.hold - n.noticed));
    n.free -= kept;
    if (opts.borrowing_reservations_share) {
      runShared(n, now, out);
    } else {
      runPhase(Phase::kAdhoc, root->children, n, now, out);
      runPhase(Phase::kOverage, overage, n, now, out);
    }
    n.free += kept;
  }

  NodeUpdateResult update(Node& n, TimePoint now) {
    NodeUpdateResult out;
    collectKills(n, now, out);
    if (anyShapeFits(n.free)) {
      runPhase(Phase::kGuaranteed, guaranteed, n, now, out);
      runBorrowers(n, now, out);
    }
    preemptIfNeeded(now);
    return out;
  }

  // ---- queues ----

  Queue* addQueue(const std::string& path, double weight) {
    auto it = queues.find(path);
    if (it != queues.end()) {
      it->second->weight = weight;
      return it->second.get();
    }
    Queue* parent = nullptr;
    auto dot = path.rfind('.');
    if (dot != std::string::npos) {
      parent = addQueue(path.substr(0, dot), 1.0);
      parent->leaf = false;
    }
    auto q = std::make_unique<Queue>(Kind::kQueue, parent, entity_seq++);
    q->path = path;
    q->weight = weight;
    Queue* raw = q.get();
    queues.emplace(path, std::move(q));
    return raw;
  }

  void maybeDropReservation(Reservation* r) {
    if (!r->removed || r->apps > 0) return;
    MORPHEUS_CHECK(r->pos[kGuaranteed] < 0 && r->pos[kOverage] < 0,
                   "reservation without apps in a heap");
    MORPHEUS_CHECK(r->need.isZero() && std::all_of(r->sources.begin(), r->sources.end(),
                                                   [](const auto& src) { return src->key == 0; }),
                   "reservation without apps in the preemption bookkeeping");
    reservations.erase(r->id);
  }
};

Scheduler::Scheduler(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Scheduler::~Scheduler() = default;

Result<std::unique_ptr<Scheduler>> Scheduler::create(
    SchedulerOptions options, std::shared_ptr<const QueueOrderingPolicy> policy) {
  if (options.preemption_grace.count() < 0)
    return invalidArgument("preemption_grace", "must be >= 0");
  if (options.soft_constraint_delay.count() < 0)
    return invalidArgument("soft_constraint_delay", "must be >= 0");
  if (options.adhoc_queues.empty()) options.adhoc_queues.push_back({"root.default", 1.0});
  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < options.adhoc_queues.size(); i++) {
    const auto& q = options.adhoc_queues[i];
    std::string field = "adhoc_queues[" + std::to_string(i) + "]";
    MORPHEUS_RETURN_IF_ERROR(validatePath(q.path, field + ".path"));
    if (!(q.weight > 0)) return invalidArgument(field + ".weight", "must be > 0");
    if (!seen.emplace(q.path, i).second)
      return invalidArgument(field + ".path", "duplicate '" + q.path + "'");
  }
  if (policy == nullptr) policy = std::make_shared<DrfOrderingPolicy>();
  auto impl = std::make_unique<Impl>(std::move(options), std::move(policy));
  impl->root = impl->addQueue("root", 1.0);
  for (const auto& q : impl->opts.adhoc_queues) impl->addQueue(q.path, q.weight);
  impl->containers.reserve(1024);
  return std::unique_ptr<Scheduler>(new Scheduler(std::move(impl)));
}

Status Scheduler::addNode(const NodeId& node, const Resource& total,
                          std::map<std::string, std::string> attributes) {
  auto& s = *impl_;
  if (node.empty()) return invalidArgument("node", "empty node id");
  if (!validResource(total))
    return invalidArgument("total", "must be non-negative and non-zero, got " + total.toString());
  if (s.nodes.count(node) != 0) return alreadyExists("node " + node.value());
  Node& n = s.nodes[node];
  n.id = node;
  n.total = total;
  n.free = total;
  n.attrs = std::move(attributes);
  s.cluster_total += total;
  s.rekeyAll();
  return Status::ok();
}

Result<std::vector<Allocation>> Scheduler::removeNode(const NodeId& node) {
  auto& s = *impl_;
  auto it = s.nodes.find(node);
  if (it == s.nodes.end()) return notFound("node " + node.value());
  Node& n = it->second;
  std::vector<Allocation> lost;
  lost.reserve(n.containers.size);
  while (n.containers.head != nullptr) lost.push_back(s.freeContainer(n.containers.head));
  s.cluster_total -= n.total;
  s.nodes.erase(it);
  s.rekeyAll();
  return lost;
}

Status Scheduler::addApp(const AppId& app, const UserId& user, const QueueRef& queue) {
  auto& s = *impl_;
  if (app.empty()) return invalidArgument("app", "empty application id");
  if (user.empty()) return invalidArgument("user", "empty user");
  if (s.apps.count(app) != 0) return alreadyExists("app " + app.value());
  Reservation* res = nullptr;
  Queue* leaf = nullptr;
  if (queue.isReservation()) {
    auto it = s.reservations.find(queue.reservationId());
    if (it == s.reservations.end() || it->second->removed) {
      return invalidArgument("queue.reservation_id",
                             "unknown reservation '" + queue.reservationId().value() + "'");
    }
    res = it->second.get();
  } else {
    auto it = s.queues.find(queue.adhocPath());
    if (it == s.queues.end())
      return invalidArgument("queue.path", "unknown ad-hoc queue '" + queue.adhocPath() + "'");
    if (!it->second->leaf) {
      return invalidArgument("queue.path",
                             "'" + queue.adhocPath() + "' is a parent queue; apps go to leaves");
    }
    leaf = it->second.get();
  }
  Entity* parent = res;
  User* u = nullptr;
  if (leaf != nullptr) {
    auto& slot = leaf->users[user];
    if (slot == nullptr) {
      slot = std::make_unique<User>(Kind::kUser, leaf, s.entity_seq++);
      slot->id = user;
      slot->leaf = leaf;
    }
    u = slot.get();
    u->apps++;
    parent = u;
  } else {
    res->apps++;
  }
  auto a = std::make_unique<App>(Kind::kApp, parent, s.entity_seq++);
  a->id = app;
  a->user_id = user;
  a->user = u;
  a->res = res;
  s.apps.emplace(app, std::move(a));
  return Status::ok();
}

Result<std::vector<Allocation>> Scheduler::removeApp(const AppId& app) {
  auto& s = *impl_;
  auto it = s.apps.find(app);
  if (it == s.apps.end()) return notFound("app " + app.value());
  App* a = it->second.get();
  std::vector<Allocation> out;
  out.reserve(a->containers.size);
  while (a->containers.head != nullptr) out.push_back(s.freeContainer(a->containers.head));
  for (const auto& ask : a->asks) {
    s.removeShape(ask.req.capability);
    s.changeDemand(a, ask.req.capability, -ask.req.count);
  }
  a->asks.clear();
  s.refresh(a);
  MORPHEUS_CHECK(a->pos[kParent] < 0, "removed app still in a heap");
  std::unique_ptr<App> owned = std::move(it->second);
  s.apps.erase(it);
  if (owned->user != nullptr) {
    User* u = owned->user;
    if (--u->apps == 0) {
      MORPHEUS_CHECK(u->pos[kParent] < 0 && u->used.isZero(), "empty user still active");
      u->leaf->users.erase(u->id);
    }
  } else if (owned->res != nullptr) {
    owned->res->apps--;
    s.maybeDropReservation(owned->res);
  }
  return out;
}

Status Scheduler::updateAsks(const AppId& app, const std::vector<ResourceRequest>& asks) {
  auto& s = *impl_;
  auto it = s.apps.find(app);
  if (it == s.apps.end()) return notFound("app " + app.value());
  App* a = it->second.get();
  // Validate everything before changing anything.
  for (size_t i = 0; i < asks.size(); i++) {
    const auto& r = asks[i];
    std::string f = "asks[" + std::to_string(i) + "]";
    if (r.count < 0) return invalidArgument(f + ".count", "must be >= 0");
    if (r.gang_size < 0) return invalidArgument(f + ".gang_size", "must be >= 0");
    if (r.count > 0 && !validResource(r.capability)) {
      return invalidArgument(f + ".capability",
                             "must be non-negative and non-zero, got " + r.capability.toString());
    }
    if (r.gang_size > 1 && r.count % r.gang_size != 0) {
      return invalidArgument(f + ".count",
                             "must be a multiple of gang_size " + std::to_string(r.gang_size));
    }
    for (size_t j = 0; j < r.constraints.size(); j++) {
      if (r.constraints[j].key.empty()) {
        return invalidArgument(f + ".constraints[" + std::to_string(j) + "].key",
                               "empty attribute name");
      }
    }
    for (size_t j = 0; j < i; j++) {
      const auto& o = asks[j];
      bool same = r.request_id.empty() ? (o.request_id.empty() && o.priority == r.priority)
                                       : o.request_id == r.request_id;
      if (same)
        return invalidArgument(f + ".request_id", "duplicates asks[" + std::to_string(j) + "]");
    }
  }
  for (const auto& r : asks) {
    auto old = std::find_if(a->asks.begin(), a->asks.end(), [&r](const Ask& x) {
      return r.request_id.empty() ? (x.req.request_id.empty() && x.req.priority == r.priority)
                                  : x.req.request_id == r.request_id;
    });
    if (old != a->asks.end()) {
      s.removeShape(old->req.capability);
      s.changeDemand(a, old->req.capability, -old->req.count);
      a->asks.erase(old);
    }
    if (r.count == 0) continue;
    Ask ask;
    ask.req = r;
    s.addShape(r.capability);
    s.changeDemand(a, r.capability, r.count);
    a->asks.insert(std::upper_bound(a->asks.begin(), a->asks.end(), ask, askOrder), std::move(ask));
  }
  s.refresh(a);
  return Status::ok();
}

Result<Allocation> Scheduler::release(const AppId& app, const ContainerId& container) {
  auto& s = *impl_;
  auto it = s.containers.find(container);
  if (it == s.containers.end()) return notFound("container " + container.value());
  if (it->second.app->id != app) {
    return permissionDenied("container " + container.value() + " does not belong to app " +
                            app.value());
  }
  return s.freeContainer(&it->second);
}

Result<Allocation> Scheduler::containerCompleted(const ContainerId& container) {
  auto& s = *impl_;
  auto it = s.containers.find(container);
  if (it == s.containers.end()) return notFound("container " + container.value());
  return s.freeContainer(&it->second);
}

Status Scheduler::recoverContainer(const Allocation& c) {
  auto& s = *impl_;
  if (c.container.empty()) return invalidArgument("container.container", "empty container id");
  if (!validResource(c.resource)) {
    return invalidArgument("container.resource",
                           "must be non-negative and non-zero, got " + c.resource.toString());
  }
  auto app = s.apps.find(c.app);
  if (app == s.apps.end()) return notFound("app " + c.app.value());
  auto node = s.nodes.find(c.node);
  if (node == s.nodes.end()) return notFound("node " + c.node.value());
  if (s.containers.count(c.container) != 0)
    return alreadyExists("container " + c.container.value());
  Container* k = s.insertContainer(c.container, app->second.get(), node->second, c.resource,
                                   c.priority, c.request_id, c.am);
  MORPHEUS_CHECK(k != nullptr, "container insert after existence check");
  s.refresh(app->second.get());
  return Status::ok();
}

Status Scheduler::setReservation(const ReservationId& id, ReservationKind kind,
                                 const Resource& guaranteed) {
  auto& s = *impl_;
  if (id.empty()) return invalidArgument("reservation_id", "empty reservation id");
  if (guaranteed.anyNegative())
    return invalidArgument("guaranteed", "negative: " + guaranteed.toString());
  auto& slot = s.reservations[id];
  if (slot == nullptr) {
    slot = std::make_unique<Reservation>(Kind::kReservation, nullptr, s.entity_seq++);
    slot->id = id;
  }
  Reservation* r = slot.get();
  if (r->pos[kGuaranteed] >= 0 || r->pos[kOverage] >= 0) {
    // The tier is part of the heap key: take it out while changing it.
    if (r->pos[kGuaranteed] >= 0) s.guaranteed.erase(r);
    if (r->pos[kOverage] >= 0) s.overage.erase(r);
  }
  r->rkind = kind;
  r->guarantee = guaranteed;
  r->removed = false;
  s.refresh(r);
  return Status::ok();
}

Status Scheduler::removeReservation(const ReservationId& id) {
  auto& s = *impl_;
  auto it = s.reservations.find(id);
  if (it == s.reservations.end() || it->second->removed)
    return notFound("reservation " + id.value());
  Reservation* r = it->second.get();
  r->removed = true;
  r->guarantee = Resource();
  s.refresh(r);
  s.maybeDropReservation(r);
  return Status::ok();
}

Result<NodeUpdateResult> Scheduler::nodeUpdate(const NodeId& node, TimePoint now) {
  auto it = impl_->nodes.find(node);
  if (it == impl_->nodes.end()) return notFound("node " + node.value());
  return impl_->update(it->second, now);
}

NodeUpdateResult Scheduler::schedulePass(TimePoint now) {
  NodeUpdateResult all;
  for (auto& [id, n] : impl_->nodes) {
    NodeUpdateResult r = impl_->update(n, now);
    all.allocations.insert(all.allocations.end(), std::make_move_iterator(r.allocations.begin()),
                           std::make_move_iterator(r.allocations.end()));
    all.to_kill.insert(all.to_kill.end(), std::make_move_iterator(r.to_kill.begin()),
                       std::make_move_iterator(r.to_kill.end()));
  }
  return all;
}

std::vector<PreemptionNotice> Scheduler::takePreemptionNotices(const AppId& app) {
  auto it = impl_->apps.find(app);
  if (it == impl_->apps.end()) return {};
  return std::exchange(it->second->notices, {});
}

Resource Scheduler::clusterTotal() const { return impl_->cluster_total; }
Resource Scheduler::clusterUsed() const { return impl_->cluster_used; }
size_t Scheduler::numNodes() const { return impl_->nodes.size(); }
size_t Scheduler::numContainers() const { return impl_->containers.size(); }

Result<Resource> Scheduler::nodeUsed(const NodeId& node) const {
  auto it = impl_->nodes.find(node);
  if (it == impl_->nodes.end()) return notFound("node " + node.value());
  return it->second.used;
}

Result<Resource> Scheduler::appUsed(const AppId& app) const {
  auto it = impl_->apps.find(app);
  if (it == impl_->apps.end()) return notFound("app " + app.value());
  return it->second->used;
}

Result<int64_t> Scheduler::appPending(const AppId& app) const {
  auto it = impl_->apps.find(app);
  if (it == impl_->apps.end()) return notFound("app " + app.value());
  return it->second->pending;
}

Result<Resource> Scheduler::queueUsed(const QueueRef& queue) const {
  if (queue.isReservation()) {
    auto it = impl_->reservations.find(queue.reservationId());
    if (it == impl_->reservations.end())
      return notFound("reservation " + queue.reservationId().value());
    return it->second->used;
  }
  auto it = impl_->queues.find(queue.adhocPath());
  if (it == impl_->queues.end()) return notFound("ad-hoc queue " + queue.adhocPath());
  return it->second->used;
}

Result<Resource> Scheduler::userUsed(const std::string& path, const UserId& user) const {
  auto it = impl_->queues.find(path);
  if (it == impl_->queues.end()) return notFound("ad-hoc queue " + path);
  auto u = it->second->users.find(user);
  if (u == it->second->users.end()) return Resource();
  return u->second->used;
}

std::vector<QueueView> Scheduler::queues() const {
  // Pending demand and app counts of ad-hoc queues, charged to every ancestor.
  std::map<const Queue*, QueueView> adhoc;
  std::map<const Reservation*, int64_t> res_pending;
  for (const auto& [id, app] : impl_->apps) {
    if (app->user == nullptr) {
      if (app->res != nullptr) res_pending[app->res] += app->pending;
      continue;
    }
    Resource pending;
    for (const Ask& a : app->asks) pending += a.req.capability * a.req.count;
    for (const Entity* q = app->user->leaf; q != nullptr; q = q->parent) {
      QueueView& v = adhoc[static_cast<const Queue*>(q)];
      v.pending += pending;
      v.pending_containers += app->pending;
      v.apps++;
    }
  }
  std::vector<QueueView> out;
  for (const auto& [path, q] : impl_->queues) {
    QueueView v;
    v.ref = QueueRef::adhoc(path);
    v.leaf = q->leaf;
    v.weight = q->weight;
    v.used = q->used;
    if (auto it = adhoc.find(q.get()); it != adhoc.end()) {
      v.pending = it->second.pending;
      v.pending_containers = it->second.pending_containers;
      v.apps = it->second.apps;
    }
    out.push_back(std::move(v));
  }
  for (const auto& [id, r] : impl_->reservations) {
    QueueView v;
    v.ref = QueueRef::reservation(id);
    v.kind = r->rkind;
    v.guaranteed = r->guarantee;
    v.used = r->used;
    v.pending = r->demand;
    v.pending_containers = res_pending[r.get()];
    v.apps = r->apps;
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace morpheus::sched::reference
