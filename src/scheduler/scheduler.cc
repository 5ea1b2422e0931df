#include "scheduler/scheduler.h"

#include "scheduler/floor_div.h"
#include "scheduler/key_frontier.h"
#include "scheduler/policies/crv.h"
#include "scheduler/shape_lists.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>

namespace morpheus::sched {

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

// One granted (or recovered) container, pooled by slot. Its two strings
// (the id when given or indexed, the request id) are in
// Impl::container_names, by slot, when `named`: a scheduler without the id
// index rarely has either, and inline they would add 64 bytes to the 152
// that the accounting of a grant and an end (which also reads and relinks
// its list neighbours) brings into cache.
struct Container {
  // What a grant and an end touch first (an end reads the flags, the
  // owners, the resource and the three links), then what preemption and the
  // ids read.
  uint32_t generation = 0;  // bumped when it is freed: stale ContainerSlots miss
  int32_t slot = -1;        // its index in Impl::container_pool
  App* app = nullptr;
  Node* node = nullptr;
  Resource resource;
  // cand_link: on its owner's list of preemption candidates (not an AM, not
  // under notice) — Reservation::cands or Impl::adhoc_cands.
  Link node_link, app_link, cand_link;
  struct Source* source = nullptr;  // its reservation's candidates of its shape (null: ad hoc)
  int32_t priority = 0;
  bool live = false;        // holds a container (else its slot is free)
  bool named = false;       // has an id or a request id (Impl::container_names)
  bool am = false;          // an AM container: never preempted
  bool preempting = false;  // a notice went out
  uint64_t id_no = 0;       // its grant's sequence number (0: recovered)
  uint64_t order = 0;       // allocation (or recovery) order: the newer, the larger
  TimePoint kill_deadline;
  // Under notice: its older neighbour on the candidate list when it left it
  // (a start for putting it back in order if the notice is withdrawn).
  ContainerSlot cand_hint;
  bool kill_sent = false;  // returned in a to_kill list
  bool long_work = false;  // counted in Impl::crv's long work (LongWorkCap)
};
static_assert(sizeof(Container) <= 152, "a pooled container takes 152 bytes (see above)");

// The containers by slot, in chunks of kChunk: their addresses are stable,
// and the table of chunks (8 bytes per 256 containers) stays in cache at
// scale, so a lookup by slot misses at most on the container itself (a
// std::deque's table, a pointer per 3 containers, misses on most).
class ContainerPool {
 public:
  size_t size() const { return size_; }
  Container& operator[](size_t i) { return chunks_[i >> kShift][i & (kChunk - 1)]; }
  const Container& operator[](size_t i) const { return chunks_[i >> kShift][i & (kChunk - 1)]; }
  // One more slot, default-constructed.
  void emplaceBack() {
    if (size_ == chunks_.size() * kChunk) chunks_.push_back(std::make_unique<Container[]>(kChunk));
    size_++;
  }

 private:
  static constexpr size_t kShift = 8;
  static constexpr size_t kChunk = size_t{1} << kShift;
  std::vector<std::unique_ptr<Container[]>> chunks_;
  size_t size_ = 0;
};

// The strings of a named Container (Impl::container_names).
struct ContainerNames {
  // Its id when given (recovered) or indexed (index_container_ids); empty
  // otherwise: Impl::containerId formats it from id_no when asked.
  ContainerId id;
  std::string request_id;
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
  // searched from both ends at once: O(min(members older, members newer than
  // `c`)). A withdrawn preemption notice is as often on an old container as
  // on a new one; from the tail alone, the oldest cost a walk of the list.
  void insertByOrder(Container* c) {
    Container* after = nullptr;  // the newest member older than `c`
    for (Container *back = tail, *front = head;; back = (back->*L).prev, front = (front->*L).next) {
      if (back == nullptr || back->order < c->order) {
        after = back;
        break;
      }
      if (front->order > c->order) {
        after = (front->*L).prev;
        break;
      }
    }
    insertAfter(c, after);
  }
  // Puts `c` right after `after` (at the head when null).
  void insertAfter(Container* c, Container* after) {
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
  const Key& keyAt(size_t i) const { return v_[i].key; }
  // False when no pending need below entry `i` fits `free` (its entity's
  // FitIndex bounds, copied into the entry): a walk passes over it without
  // reading the entity. True says nothing.
  bool mayFit(size_t i, const Resource& free) const {
    return v_[i].min_memory <= free.memoryMib() && v_[i].min_vcores <= free.vcores();
  }
  // How many entries have a key with a tier other than 0.
  size_t tiered() const { return tiered_; }
  // Changes at every push and erase (never at an update): equal values mean
  // the same entities are in the heap (Impl::collectStarved's cached order).
  uint64_t membership() const { return membership_; }
  void push(Entity* e, Key k);
  void erase(Entity* e);
  void update(Entity* e, Key k);
  // `e` (in this heap) has new FitIndex bounds: copies them into its entry.
  void syncBounds(const Entity* e);

 private:
  // An entry keeps its entity's FitIndex bounds equal to the entity's
  // (push, syncBounds) while the entity is in the heap.
  struct Item {
    Key key;
    Entity* e;
    int64_t min_memory;
    int64_t min_vcores;
  };
  void set(size_t i, Item it);
  void siftUp(size_t i);
  void siftDown(size_t i);
  Slot slot_;
  std::vector<Item> v_;
  size_t tiered_ = 0;  // entries whose key's tier is not 0
  uint64_t membership_ = 0;
};

enum class Kind : uint8_t { kQueue, kUser, kApp, kReservation };

// The pending-ask index (for scale): the distinct container needs
// (capability x gang size) of the pending asks below an entity, with how many
// asks have each. A heartbeat descends into an entity only if one of them fits
// the node's free resources; otherwise no ask below it could be granted there
// (findAsk rejects an ask whose need does not fit before any other test or
// side effect), so the entity is skipped exactly as the full walk would have
// skipped it after visiting every app below it. Kept incrementally: an ask
// entering or leaving an app's list updates the app and its ancestors,
// O(depth * distinct needs).
//
// Beside the needs it keeps the least memory and the fewest vcores of any
// (a bound, not a need: they may come from two needs), so that anyFits
// answers "no" for a free room below either without reading the needs.
class FitIndex {
 public:
  void add(const Resource& need) {
    for (auto& [r, n] : needs_) {
      if (r == need) {
        n++;
        return;
      }
    }
    needs_.emplace_back(need, 1);
    min_memory_ = std::min(min_memory_, need.memoryMib());
    min_vcores_ = std::min(min_vcores_, need.vcores());
  }
  void remove(const Resource& need) {
    for (size_t i = 0; i < needs_.size(); i++) {
      if (needs_[i].first == need && --needs_[i].second == 0) {
        needs_[i] = std::move(needs_.back());
        needs_.pop_back();
        min_memory_ = min_vcores_ = kNone;
        for (const auto& [r, n] : needs_) {
          min_memory_ = std::min(min_memory_, r.memoryMib());
          min_vcores_ = std::min(min_vcores_, r.vcores());
        }
        return;
      }
    }
  }
  // The largest need (memory, then vcores) that fits in `bound`; zero when
  // there is none.
  Resource largestWithin(const Resource& bound) const {
    Resource best;
    for (const auto& [r, n] : needs_) {
      if (r.fitsIn(bound) &&
          std::pair(r.memoryMib(), r.vcores()) > std::pair(best.memoryMib(), best.vcores()))
        best = r;
    }
    return best;
  }
  // Some pending ask's memory and vcores fit `bound`'s (extended resources
  // ignored: queue caps are on memory and vcores).
  bool anyFitsMemVcores(const Resource& bound) const {
    for (const auto& [r, n] : needs_) {
      if (r.memoryMib() <= bound.memoryMib() && r.vcores() <= bound.vcores()) return true;
    }
    return false;
  }
  // The least memory and the fewest vcores of any need (kNone when none).
  int64_t minMemory() const { return min_memory_; }
  int64_t minVcores() const { return min_vcores_; }
  // Some pending ask's need fits `free`.
  bool anyFits(const Resource& free) const {
    if (min_memory_ > free.memoryMib() || min_vcores_ > free.vcores()) return false;
    for (const auto& [r, n] : needs_) {
      if (r.fitsIn(free)) return true;
    }
    return false;
  }

 private:
  static constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  // The least memory and vcores over needs_ (kNone when there is none).
  int64_t min_memory_ = kNone;
  int64_t min_vcores_ = kNone;
  std::vector<std::pair<Resource, int64_t>> needs_;  // distinct needs, ask counts > 0
};

// A node of the scheduling tree: ad-hoc queue, user (inside a leaf), app, or
// reservation queue. `used` includes all descendants.
//
// A walk passes over most entities it meets after reading their first cache
// line (its flags and the bounds of `fit`): those come first, and an entity
// starts a line.
struct alignas(64) Entity {
  Entity(Kind k, Entity* p, uint64_t s) : kind(k), parent(p), seq(s) {}
  Kind kind;
  bool skipped[kSlots] = {false, false, false};  // out of the heap for the current phase
  bool has_demand = false;
  bool stale = false;           // on Impl::stale: its refresh is deferred to Impl::flushStale
  int32_t demand_children = 0;  // children with has_demand
  FitIndex fit;                 // needs of the pending asks below (itself for an app)
  Entity* parent;               // null for the ad-hoc root and reservation queues
  uint64_t seq;                 // creation order: the tie-break
  double weight = 1.0;
  Resource used;
  EntityHeap children{kParent};  // children with demand, by policy score
  int32_t pos[kSlots] = {-1, -1, -1};
};

struct User;
struct Queue : Entity {
  using Entity::Entity;
  std::string path;
  bool leaf = true;
  std::map<UserId, std::unique_ptr<User>> users;  // leaves only
  // Leaves: orders users and apps inside; null = the scheduler's.
  std::shared_ptr<const QueueOrderingPolicy> policy;
  PolicyPoints points;          // extensionPoints(*policy), when policy is set
  int32_t apps = 0;             // leaves: apps admitted
  std::optional<Resource> max;  // Scheduler::setQueueMaxResources; none = unlimited
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
struct Source;
// Impl::lenders: sources by the allocation order of their newest candidate.
using LenderSet = std::set<std::pair<uint64_t, Source*>>;
struct Source {
  Reservation* owner = nullptr;
  Resource shape;
  CList<&Container::cand_link> cands;
  uint64_t key = 0;  // its key in Impl::lenders (its newest candidate's order), 0 = not there
  LenderSet::iterator in_lenders;  // its entry there while key != 0
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

// Which nodes meet one list of placement constraints (Impl::placeable's
// check), by node slot: 0 = not yet known, else kFitKnown with kFitHard if
// every hard constraint matches and kFitSoft if every soft one does. Shared
// by the asks with the same list (Impl::fitOf); valid while `epoch` is
// Impl::attrs_epoch (a node's attributes changed: everything is unknown
// again). Matching strings against each node's attribute map for every ask
// a node's phase passes over led morpheus-sim's profile on the Phoenix
// trace mixes.
struct ConstraintFit {
  static constexpr uint8_t kFitKnown = 1, kFitHard = 2, kFitSoft = 4;
  uint64_t epoch = 0;
  std::vector<uint8_t> by_slot;
};

struct Ask {
  ResourceRequest req;   // req.count = containers still wanted
  bool waiting = false;  // passed over on a node not matching its soft constraints
  TimePoint wait_since;
  // The CRV's resources of req.constraints (ConstraintResourceVector::Resolved;
  // req.constraints never change once the ask is created).
  mutable ConstraintResourceVector::Resolved crv_resolved;
  std::shared_ptr<ConstraintFit> fit;  // of req.constraints; null without constraints
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
  // Its preemption notices not yet taken, by container and deadline: the
  // PreemptionNotice (with the ids' strings) is built when taken.
  struct Notice {
    ContainerSlot container;
    TimePoint deadline;
  };
  std::vector<Notice> notices;
  AppHint hint;  // the leaf policy's DagPlanner over the last reportDag, else its NoDagPlanner
  // Its live containers per non-empty request id, sorted by id, no zero
  // counts (AskInput::running): one entry per stage name an AM asks under.
  std::vector<std::pair<std::string, int64_t>> running_by_request;
  bool reported_dag = false;
  TimePoint since;              // Impl::last_now when added (AppInput::since)
  std::vector<Node*> reserved;  // nodes reserved for it (NodeReservationOptions)
  int32_t slot = -1;            // in Impl::app_slots
};

struct Node {
  NodeId id;
  Resource total, used, free;
  std::map<std::string, std::string> attrs;
  CList<&Container::node_link> containers;
  int32_t marked = 0;                   // containers under preemption notice, not yet sent to kill
  std::vector<Container*> notice_list;  // those `marked` containers, in no order
  // At or before the earliest kill deadline of those `marked` containers
  // (TimePoint::max() when none is known): Impl::collectKills reads
  // notice_list only from then on.
  TimePoint kill_due = TimePoint::max();
  Resource noticed;  // containers under preemption notice, until they end (kills included)
  // Scratch of the preemption pass (Impl::selectVictims): the candidates
  // taken on it, not yet marked (its room left is Impl::slot_rem).
  Resource tentative;
  // The starved containers its notices make room for (while it has notices):
  // borrowers get only the free room beyond them (Impl::update).
  Resource hold;
  std::vector<Container*> taken;
  // NodeReservationOptions: the app it is reserved for (null: none), the
  // need it keeps room for, until when, whether the room is kept from its
  // leaf's packing tier only (else from its whole leaf), and the room kept
  // from the part of the walk under way (given back when it ends).
  App* resv_app = nullptr;
  Resource resv_need, resv_kept;
  TimePoint resv_until;
  bool resv_packing = false;
  ConstraintResourceVector::NodeSlot* crv = nullptr;  // its slot in Impl::crv
  // Changes of the free vcores not yet given to Impl::crv while it is
  // dormant (ConstraintResourceVector::deferFreeChanges).
  int64_t crv_deferred = 0;
  int32_t slot = -1;  // in Impl::node_slots
};

// Node slots with room a starved container may fit (Impl::cover). A
// superset by design: a slot is set wherever a node's room (free + noticed)
// may have grown, and cleared only when cover visits the node and finds no
// room (memory or vcores at or below zero). Iterated in slot order.
// Each word of 64 slots has a stamp that moves when one of its bits is set
// again or when touch() reports a change of one of its slots' rooms: what
// is read of a word (its bits and its rooms) is unchanged while its stamp
// is (Impl::walkWhether's WordPlace).
class RoomSlots {
 public:
  void set(size_t i) {
    if (words_.size() <= i / 64) {
      words_.resize(i / 64 + 1, 0);
      stamps_.resize(i / 64 + 1, 0);
    }
    const uint64_t bit = uint64_t{1} << (i % 64);
    if ((words_[i / 64] & bit) == 0) stamps_[i / 64] = ++clock_;
    words_[i / 64] |= bit;
  }
  void reset(size_t i) {
    if (i / 64 < words_.size()) words_[i / 64] &= ~(uint64_t{1} << (i % 64));
  }
  bool test(size_t i) const {
    return i / 64 < words_.size() && ((words_[i / 64] >> (i % 64)) & 1) != 0;
  }
  // The room of slot `i` changed.
  void touch(size_t i) {
    if (i / 64 < stamps_.size()) stamps_[i / 64] = ++clock_;
  }
  size_t numWords() const { return words_.size(); }
  uint64_t word(size_t w) const { return words_[w]; }
  uint64_t stamp(size_t w) const { return stamps_[w]; }
  // Calls f(slot) for each set slot in increasing order while f returns
  // true; f may reset any slot (a word is read before its slots are visited).
  template <typename F>
  void forEach(F&& f) const {
    for (size_t w = 0; w < words_.size(); w++) {
      for (uint64_t bits = words_[w]; bits != 0; bits &= bits - 1) {
        if (!f(w * 64 + static_cast<size_t>(__builtin_ctzll(bits)))) return;
      }
    }
  }

 private:
  std::vector<uint64_t> words_;
  std::vector<uint64_t> stamps_;  // per word, from clock_ (0: never stamped)
  uint64_t clock_ = 0;
};

// A reservation below its guarantee with demand, in containers of its
// largest pending need (`shape`): `uncovered` of them have no room yet.
struct Starved {
  Reservation* r;
  Resource shape;
  int64_t uncovered;
  bool operator==(const Starved&) const = default;
};

// A starved reservation with containers uncovered, in Impl::walkWhether:
// its shape's memory and vcores, and how many of its containers are still
// uncovered (`left`, written back to `st` when the walk leaves it).
struct OpenStarved {
  int64_t mem, vc, left;
  double inv_mem, inv_vc;  // 1 / mem, 1 / vc (floorDiv)
  Starved* st;
};

constexpr size_t kNoSlot = std::numeric_limits<size_t>::max();

// The open starved reservations of Impl::walkWhether (OpenStarved, by
// their places in its list) grouped by shape. Offered a node's room in
// order, a reservation takes containers only while it is the first open one
// of its shape (its group's head): the head takes all that fit or all it has
// left, so a later one of the same shape finds room below the shape unless
// the head closed. A node's placements are therefore the heads', taken in
// the order of their places among those that still fit, a closed head
// replaced by the next of its group where that one stands: the same
// placements as offering the node every open reservation in order, in
// O(groups x (groups + closed)) instead of O(open reservations) (at 50,000
// nodes thousands of reservations are starved at once, of a few shapes).
// Only a head ever has its count changed, so every member from the head on
// has containers uncovered.
struct OpenGroups {
  struct Group {
    int64_t mem, vc;
    double inv_mem, inv_vc;  // 1 / mem, 1 / vc (floorDiv)
    uint32_t head, end;      // members[head, end): its open reservations' places, increasing
  };
  std::vector<Group> groups;
  std::vector<uint32_t> members;  // places in the open list, group by group
  // The groups with a head, by the head's place, and their least memory and
  // vcores (a room below either fits none of them).
  std::vector<uint32_t> order;
  int64_t low_mem = 0, low_vc = 0;
  std::vector<std::tuple<int64_t, int64_t, uint32_t>> by_shape;  // scratch of build

  uint32_t headPlace(uint32_t g) const { return members[groups[g].head]; }

  // Groups `open` (every count above 0). O(open log open).
  void build(const std::vector<OpenStarved>& open) {
    by_shape.clear();
    for (size_t i = 0; i < open.size(); i++)
      by_shape.emplace_back(open[i].mem, open[i].vc, static_cast<uint32_t>(i));
    std::sort(by_shape.begin(), by_shape.end());
    groups.clear();
    members.clear();
    for (const auto& [mem, vc, at] : by_shape) {
      const auto n = static_cast<uint32_t>(members.size());
      if (groups.empty() || groups.back().mem != mem || groups.back().vc != vc)
        groups.push_back({mem, vc, open[at].inv_mem, open[at].inv_vc, n, n});
      members.push_back(at);
      groups.back().end = n + 1;
    }
    reorder(open);
  }

  // Moves each group's head past its reservations with nothing left and
  // orders the groups that still have one. O(groups log groups + closed).
  void reorder(const std::vector<OpenStarved>& open) {
    order.clear();
    for (size_t g = 0; g < groups.size(); g++) {
      Group& gr = groups[g];
      while (gr.head < gr.end && open[members[gr.head]].left == 0) gr.head++;
      if (gr.head < gr.end) order.push_back(static_cast<uint32_t>(g));
    }
    std::sort(order.begin(), order.end(),
              [&](uint32_t a, uint32_t b) { return headPlace(a) < headPlace(b); });
    if (order.empty()) return;
    low_mem = groups[order.front()].mem;
    low_vc = groups[order.front()].vc;
    for (uint32_t g : order) {
      low_mem = std::min(low_mem, groups[g].mem);
      low_vc = std::min(low_vc, groups[g].vc);
    }
  }
};

// What Impl::walkWhether places in one word of 64 node slots (or one block
// of 8) when no open starved container runs out there: per group of open
// starved reservations of one shape (OpenGroups, by its place in the
// groups' order), the containers the unit's rooms take from its head with
// every count taken as unbounded (`d`), and their sum. A function of the
// groups' shapes in order (`shapes`: their ShapeLists id) and of the word's
// bits and rooms (RoomSlots::stamp): valid while both are the same.
struct WordPlace {
  uint64_t shapes = 0;
  uint64_t stamp = 0;  // 0: empty (RoomSlots stamps from 1)
  uint64_t last_used = 0;
  int64_t total = 0;
  std::vector<int64_t> d;
};

// How many containers of `shape` the rooms of the nodes cover may visit
// hold: per node slot fitCount(room, shape) while the slot is in room_slots
// (0 otherwise), and their sum, kept as rooms change (Impl::countRoom).
struct ShapeRooms {
  Resource shape;
  std::vector<int64_t> count;
  int64_t total = 0;
  uint64_t last_used = 0;
};

// Impl::cover's last walk that placed every starved container: the starved
// containers it was given and the node slot where it ended. Its answer (0)
// holds for the same starved containers (reservation, shape and count, in
// order) while no node up to `end` changed its room and the container left
// out is beyond `end`: the walk reads nothing else and stops at `end`.
struct CoverMemo {
  bool valid = false;
  size_t end = 0;
  std::vector<Starved> starved;
  bool holds(const std::vector<Starved>& now, size_t changed_low, size_t without_slot) const {
    return valid && changed_low > end && without_slot > end && now == starved;
  }
};

// Impl::stillNeeded's last answer: whether cover, with `without`'s room
// left out, left some of the given starved containers without room. It holds
// while the starved containers (reservation, shape and count, in order), the
// rooms (Impl::room_version) and the left-out room (node slot and resource)
// are the same: the walk and the counts read nothing else. Consecutive
// notices of one node whose grace ended together are re-checked against
// the same rooms while none is withdrawn (a kill leaves the room as it is).
struct RecheckMemo {
  bool valid = false;
  uint64_t room_version = 0;
  size_t without_slot = 0;
  Resource without;
  std::vector<Starved> starved;
  int64_t uncovered = 0;
  bool holds(const std::vector<Starved>& now, uint64_t version, size_t slot,
             const Resource& res) const {
    return valid && version == room_version && slot == without_slot && res == without &&
           now == starved;
  }
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
  membership_++;
  if (k.tier != 0) tiered_++;
  v_.push_back({k, e, e->fit.minMemory(), e->fit.minVcores()});
  siftUp(v_.size() - 1);
}

void EntityHeap::syncBounds(const Entity* e) {
  Item& it = v_[static_cast<size_t>(e->pos[slot_])];
  it.min_memory = e->fit.minMemory();
  it.min_vcores = e->fit.minVcores();
}

void EntityHeap::erase(Entity* e) {
  membership_++;
  size_t i = static_cast<size_t>(e->pos[slot_]);
  e->pos[slot_] = -1;
  if (v_[i].key.tier != 0) tiered_--;
  Item last = v_.back();
  v_.pop_back();
  if (i == v_.size()) return;
  set(i, last);
  siftDown(i);
  siftUp(static_cast<size_t>(last.e->pos[slot_]));
}

void EntityHeap::update(Entity* e, Key k) {
  size_t i = static_cast<size_t>(e->pos[slot_]);
  // The same key leaves the heap as it is (the sifts would move nothing:
  // the heap is ordered after every push, erase and update), so a refresh
  // that does not change an entity's score costs no sift. The score is
  // compared bit for bit: -0.0 and 0.0, or two NaNs, are stored as given.
  const Key& old = v_[i].key;
  if (k.tier == old.tier && k.seq == old.seq &&
      std::memcmp(&k.score, &old.score, sizeof k.score) == 0) {
    return;
  }
  tiered_ += static_cast<size_t>(k.tier != 0) - static_cast<size_t>(old.tier != 0);
  v_[i].key = k;
  siftDown(i);
  siftUp(static_cast<size_t>(e->pos[slot_]));
}

bool validResource(const Resource& r) { return !r.anyNegative() && !r.isZero(); }

bool matches(const PlacementConstraint& c, const std::map<std::string, std::string>& attrs) {
  return constraintMatches(c, attrs);
}

bool hasHard(const ResourceRequest& r) {
  return std::any_of(r.constraints.begin(), r.constraints.end(),
                     [](const PlacementConstraint& c) { return c.hard; });
}

bool askOrder(const Ask& a, const Ask& b) {
  return std::tie(a.req.priority, a.req.request_id) < std::tie(b.req.priority, b.req.request_id);
}

// A key, and for the comparison operators exactly one value (a number for
// kAtLeast).
Status validateConstraint(const PlacementConstraint& c, const std::string& field) {
  if (c.key.empty()) return invalidArgument(field + ".key", "empty attribute name");
  if (c.op == ConstraintOp::kIn) return Status::ok();
  if (c.values.size() != 1)
    return invalidArgument(field + ".values", "a lower bound takes exactly one value");
  PlacementConstraint probe = c;
  if (c.op == ConstraintOp::kAtLeast && !constraintMatches(probe, {{c.key, c.values[0]}}))
    return invalidArgument(field + ".values", "'" + c.values[0] + "' is not a number");
  if (c.op == ConstraintOp::kVersionAtLeast && !constraintMatches(probe, {{c.key, c.values[0]}}))
    return invalidArgument(field + ".values", "'" + c.values[0] + "' is not a version");
  return Status::ok();
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
      : opts(std::move(o)), policy(std::move(p)), points(extensionPoints(*policy)) {
    crv.deferFreeChanges([this](const NodeId& id) -> int64_t {
      Node* n = findNode(id);
      if (n == nullptr) return 0;
      return std::exchange(n->crv_deferred, 0);
    });
  }

  const SchedulerOptions opts;
  const std::shared_ptr<const QueueOrderingPolicy> policy;
  const PolicyPoints points;  // the scheduler's policy's extension points

  std::map<NodeId, Node> nodes;
  // Lookup by id without string compares down the tree (the
  // tree's find led morpheus-sim's profile at scale). Never iterated;
  // std::map keeps element addresses stable.
  std::unordered_map<NodeId, Node*> node_index;
  Node* findNode(const NodeId& id) const {
    auto it = node_index.find(id);
    return it == node_index.end() ? nullptr : it->second;
  }
  std::vector<Node*> node_slots;  // by NodeSlot; null once removed, never reused
  // Per node slot, the node's room for cover (free + noticed; zero once
  // removed), kept equal to it at every change (syncRoom): cover reads this
  // dense copy instead of every Node, and visits only the nodes whose room
  // may fit a starved shape.
  std::vector<Resource> slot_room;
  // room_version counts the changes of slot_room and node_slots.
  uint64_t room_version = 0;
  // The node whose room runBorrowers takes out of n.free for its phases
  // only (kNoSlot: none): its slot_room is brought up to date once, when
  // the phases end. Nothing reads slot_room in between (cover runs before
  // and after a node's phases, never within), so the memos see one change
  // (none when the phases granted nothing) instead of the room going down
  // and back up.
  size_t room_deferred = kNoSlot;
  // An unchanged room leaves room_version, room_changed_low and the
  // ShapeRooms counts as they are: a count is fitCount of the room while the
  // slot is in room_slots, and a slot leaves room_slots only with no room
  // (fitCount 0), so setting its bit again without a change of room leaves
  // the count at 0.
  void syncRoom(const Node& n) {
    const auto slot = static_cast<size_t>(n.slot);
    if (slot == room_deferred) return;
    const Resource room = n.free + n.noticed;
    if (room == slot_room[slot]) return;
    slot_room[slot] = room;
    room_version++;
    room_changed_low = std::min(room_changed_low, slot);
    room_slots.touch(slot);
    countRoom(slot);
  }
  // Brings every ShapeRooms' count of `slot` to its room and bit.
  void countRoom(size_t slot) const {
    for (ShapeRooms& sr : shape_rooms) {
      const int64_t now = room_slots.test(slot) ? fitCount(slot_room[slot], sr.shape) : 0;
      sr.total += now - sr.count[slot];
      sr.count[slot] = now;
    }
  }
  Node* slotNode(NodeSlot slot) const {
    if (slot.value < 0 || static_cast<size_t>(slot.value) >= node_slots.size()) return nullptr;
    return node_slots[static_cast<size_t>(slot.value)];
  }
  Resource cluster_total, cluster_used;
  std::map<std::string, std::unique_ptr<Queue>> queues;  // by path
  Queue* root = nullptr;
  std::map<ReservationId, std::unique_ptr<Reservation>> reservations;
  // The same reservations by hash, for setReservation's lookup (the
  // simulator's plan follower calls it at every guarantee change: the
  // ordered map's string compares were 5% of its 50,000-node evaluation).
  std::unordered_map<ReservationId, Reservation*> reservation_by_id;
  std::unordered_map<AppId, std::unique_ptr<App>>
      apps;  // lookup only: never iterated for decisions
  // The live apps by AppSlot; a removed app's slot is reused with its
  // generation bumped.
  struct AppSlotEntry {
    App* app = nullptr;
    uint32_t generation = 0;
  };
  std::vector<AppSlotEntry> app_slots;
  std::vector<int32_t> free_app_slots;
  App* slotApp(AppSlot slot) const {
    if (slot.index < 0 || static_cast<size_t>(slot.index) >= app_slots.size()) return nullptr;
    const AppSlotEntry& e = app_slots[static_cast<size_t>(slot.index)];
    return e.generation == slot.generation ? e.app : nullptr;
  }
  AppSlot appSlotOf(const App* a) const {
    return AppSlot{a->slot, app_slots[static_cast<size_t>(a->slot)].generation};
  }
  // Containers live in a pool indexed by ContainerSlot (stable element
  // addresses); freed slots are reused, their generation bumped.
  // The id index is for lookups by id only: never iterated.
  ContainerPool container_pool;
  std::vector<int32_t> free_container_slots;
  std::unordered_map<ContainerId, int32_t> containers;  // id -> slot (index_container_ids)
  // The strings of the named containers, by slot (sized to the highest
  // named slot; an entry is read only while its container is named).
  std::vector<ContainerNames> container_names;
  static inline const std::string kNoRequestId;
  const std::string& requestIdOf(const Container& c) const {
    return c.named ? container_names[static_cast<size_t>(c.slot)].request_id : kNoRequestId;
  }
  Status notIndexed() const {
    return infeasible("containers are addressed by slot only (index_container_ids is off)");
  }
  Container* slotContainer(ContainerSlot slot) {
    if (slot.index < 0 || static_cast<size_t>(slot.index) >= container_pool.size()) return nullptr;
    Container& c = container_pool[static_cast<size_t>(slot.index)];
    return c.live && c.generation == slot.generation ? &c : nullptr;
  }
  Container* idContainer(const ContainerId& id) {
    auto it = containers.find(id);
    return it == containers.end() ? nullptr : &container_pool[static_cast<size_t>(it->second)];
  }
  // Preemption candidates of ad-hoc apps (no reservation), allocation order.
  CList<&Container::cand_link> adhoc_cands;
  // Sum over reservations below their guarantee with demand (the guaranteed
  // heap) of min(demand, guarantee - used): what preemption must make room for.
  Resource need_total;
  // Sources that may lend a container: of a reservation not below its
  // guarantee with demand, non-empty, and whose shape the reservation can
  // spare net of containers already under notice; by the allocation order of
  // their newest candidate.
  LenderSet lenders;
  uint64_t order_seq = 0;
  std::vector<Container*> victim_heap;      // scratch of selectVictims
  std::vector<Reservation*> victim_owners;  // scratch of selectVictims
  std::vector<Node*> victim_nodes;          // scratch of selectVictims
  mutable std::vector<Starved> starved;     // scratch of cover and selectVictims
  mutable std::vector<std::pair<uint64_t, Reservation*>> starved_by_seq;  // of collectStarved
  // guaranteed.membership() when starved_by_seq was built; none at first.
  mutable std::optional<uint64_t> starved_by_seq_of;
  mutable std::vector<OpenStarved> walk_open;  // scratch of walkWhether
  mutable OpenGroups open_groups;              // scratch of walkWhether: walk_open by shape
  mutable std::vector<uint32_t> visit_groups;  // scratch of walkWhether
  // walkWhether's placements per word (kWordPlaces per word, the least
  // recently used replaced), and per block of 8 slots.
  static constexpr size_t kWordPlaces = 4;
  mutable std::vector<WordPlace> word_places;
  mutable std::vector<WordPlace> block_places;
  mutable std::vector<std::pair<int64_t, int64_t>> open_shapes;  // scratch of walkWhether
  mutable ShapeLists shape_lists;                                // ids of open_shapes
  mutable uint64_t open_shapes_id = 0;  // of open_groups' heads' shapes in order (not kept)
  mutable uint64_t place_clock = 0;
  mutable RoomSlots room_slots;      // nodes cover may place on (RoomSlots)
  mutable uint64_t cover_epoch = 0;  // one per cover pass (slot_rem_epoch)
  // Per node slot, the room left after cover's placements (scratch of
  // cover and selectVictims), this pass's when slot_rem_epoch equals
  // cover_epoch.
  mutable std::vector<Resource> slot_rem;
  mutable std::vector<uint64_t> slot_rem_epoch;
  // The last walk of cover() that covered everything, and the lowest slot
  // whose room changed since (kNoSlot: none).
  mutable CoverMemo cover_memo;
  mutable RecheckMemo recheck_memo;
  mutable size_t room_changed_low = kNoSlot;
  // The open shapes of recent counts (at most kShapeRooms, the least
  // recently used replaced), for coveredByCount and shortByCount.
  static constexpr size_t kShapeRooms = 8;
  static constexpr size_t kShapesChecked = 4;
  mutable std::vector<ShapeRooms> shape_rooms;
  mutable uint64_t shape_rooms_clock = 0;
  int64_t marked_total = 0;     // sum of Node::marked
  int64_t untaken_notices = 0;  // sum of the apps' notices (App::notices)
  // Set during a nodeUpdate into a SlotUpdate: grants and kills go there
  // instead of the NodeUpdateResult.
  SlotUpdate* slot_out = nullptr;
  int64_t reserved_nodes = 0;  // nodes with Node::resv_app set
  // `c` is no longer under a notice not yet sent to kill (killed, withdrawn
  // or ended).
  void unmark(Container* c) {
    Node& n = *c->node;
    n.marked--;
    marked_total--;
    auto it = std::find(n.notice_list.begin(), n.notice_list.end(), c);
    *it = n.notice_list.back();
    n.notice_list.pop_back();
  }
  std::vector<Container*> kills_due;   // scratch of collectKills
  EntityHeap guaranteed{kGuaranteed};  // reservations below guarantee with demand
  EntityHeap overage{kOverage};        // reservations with demand
  std::map<std::pair<int64_t, int64_t>, int64_t> shapes;  // (MiB, vcores) of pending asks -> #asks
  FitIndex reservation_fit;  // needs of the pending asks of reservation apps (all reservations)
  std::vector<std::pair<EntityHeap*, Entity*>> skipped;  // scratch of the current phase
  // Entities whose refresh is deferred (dropContainerDeferred) until the
  // next call that reads or changes the scheduling state (flushStale), and
  // the scratch of their parents for flushStale.
  std::vector<Entity*> stale, stale_next;
  // Scratch of the in-place walks (descendInPlace, runShared), one per walk
  // under way: heap indices still to visit, by key (a deque: a deeper
  // level's growing it moves no level).
  std::deque<KeyFrontier<Key>> frontiers;
  size_t frontier_depth = 0;
  // Scratch of the current phase: apps that declined every placeable ask on
  // the node (AskChooser::kDecline), in the order the walk met them, and
  // whether the walk of the leaf under way reached its packing tier.
  std::vector<App*> declined;
  bool packed = false;
  uint64_t entity_seq = 0;
  uint64_t id_seq = 0;
  // Phoenix: the Constraint Resource Vector of the pending asks,
  // the apps with hard-constrained asks (by creation order) whose keys follow
  // its estimates, and the CRV version they were keyed at.
  ConstraintResourceVector crv;
  std::map<uint64_t, App*> constrained_apps;
  // ConstraintFit of each constraint list in use, by an exact encoding of the
  // list (fitOf); entries whose asks are all gone are swept as the map grows.
  std::map<std::string, std::weak_ptr<ConstraintFit>> fits;
  size_t fits_live = 0;      // entries alive at the last sweep
  uint64_t attrs_epoch = 1;  // bumped when a node's attributes change
  TimePoint last_now;        // the latest heartbeat time: the scheduler's notion of now
  // The first heartbeat time at which preemptIfNeeded checks again
  // (SchedulerOptions::preemption_interval after its last check).
  TimePoint next_preemption_check = TimePoint::min();
  uint64_t crv_keyed = 0;
  bool crv_waits = false;  // some policy (a leaf's or the scheduler's) is constraint-aware

  // ---- policies ----

  // Installs `p` (null = the scheduler's) as `leaf`'s policy and looks up its
  // extension points, once: at create() and at each setAdhocQueues.
  void setLeafPolicy(Queue* leaf, std::shared_ptr<const QueueOrderingPolicy> p) {
    leaf->points = p != nullptr ? extensionPoints(*p) : PolicyPoints{};
    leaf->policy = std::move(p);
  }

  // crv_waits from the installed policies: the scheduler's, or any leaf's
  // that has its own, provides ConstraintAwareAppOrdering.
  void updateCrvWaits() {
    crv_waits = points.constrained_apps != nullptr;
    for (const auto& [path, q] : queues) {
      if (q->policy != nullptr && q->points.constrained_apps != nullptr) crv_waits = true;
    }
  }

  // ---- keys and heap membership ----

  // The extension points of the policy ordering the children of `e`'s
  // parent: a leaf's own policy for its users and their apps, the
  // scheduler's otherwise.
  const PolicyPoints& policyOf(const Entity* e) const {
    const Queue* leaf = nullptr;
    if (e->kind == Kind::kUser) leaf = static_cast<const User*>(e)->leaf;
    if (e->kind == Kind::kApp && static_cast<const App*>(e)->user != nullptr)
      leaf = static_cast<const App*>(e)->user->leaf;
    return leaf != nullptr && leaf->policy != nullptr ? leaf->points : points;
  }

  double parentScore(Entity* e) const {
    const PolicyPoints& p = policyOf(e);
    if (e->kind == Kind::kApp) return appScore(static_cast<const App*>(e), p);
    if (e->kind == Kind::kUser && p.users != nullptr) {
      double best = e->children.empty() ? std::numeric_limits<double>::infinity()
                                        : e->children.topKey().score;
      return p.users->userScore(e->used, e->weight, cluster_total, best);
    }
    return p.order->score(e->used, e->weight, cluster_total);
  }

  Key key(Entity* e, Slot s) const {
    if (s == kParent) return Key{0, parentScore(e), e->seq};
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

  // `e`'s FitIndex changed: the entries of the heaps it is in follow.
  void syncBounds(Entity* e) {
    for (int s = 0; s < kSlots; s++) {
      if (e->pos[s] < 0) continue;
      if (EntityHeap* h = heapOf(e, static_cast<Slot>(s))) h->syncBounds(e);
    }
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
    for (; e != nullptr; e = e->parent) refreshOne(e);
  }
  // refresh of `e` alone.
  void refreshOne(Entity* e) {
    bool demand =
        e->kind == Kind::kApp ? static_cast<App*>(e)->pending > 0 : e->demand_children > 0;
    if (demand != e->has_demand) {
      e->has_demand = demand;
      if (e->parent != nullptr) e->parent->demand_children += demand ? 1 : -1;
    }
    for (int s = 0; s < kSlots; s++) place(e, static_cast<Slot>(s));
    if (e->kind == Kind::kReservation) syncPreemption(static_cast<Reservation*>(e));
  }

  // The deferred refreshes of dropContainerDeferred. A container's end
  // changes only usage (never demand), and refresh's outcome — keys, heap
  // membership, need and lenders — is a function of the state it reads
  // (usage, demand, guarantees, notices, candidates), not of the changes
  // that led there, and the order of a heap's entries depends on their keys
  // only (keys are a total order), never on its layout. So one refresh per
  // stale entity, children before their parents, leaves the scheduler as a
  // refresh at every end would: entities are refreshed level by level from
  // the stale apps up, each parent after its stale children (an entity
  // reached again from a deeper child is refreshed again). Nothing reads
  // those fields between the ends and the flush: every public call but
  // containerCompleted by slot flushes first.
  void flushStale() {
    while (!stale.empty()) {
      stale_next.clear();
      for (Entity* e : stale) {
        e->stale = false;
        refreshOne(e);
        if (Entity* p = e->parent; p != nullptr && !p->stale) {
          p->stale = true;
          stale_next.push_back(p);
        }
      }
      stale.swap(stale_next);
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
      if (src->key != 0 && key != 0) {
        // Re-keyed in place (its newest candidate changed at each grant and
        // end): the set's node is moved, not freed and allocated again, and
        // found from the source's own iterator, not searched for.
        auto node = lenders.extract(src->in_lenders);
        node.value().first = key;
        src->in_lenders = lenders.insert(lenderHint(key), std::move(node));
      } else if (src->key != 0) {
        lenders.erase(src->in_lenders);
      } else {
        src->in_lenders = lenders.emplace_hint(lenderHint(key), key, src.get());
      }
      src->key = key;
    }
  }

  // Where `key` goes in lenders when it is the newest there (a grant made its
  // container the source's newest candidate: the usual re-key): the end, an
  // insertion without a search (amortized O(1)). Else its place, searched
  // for (O(log lenders)).
  LenderSet::const_iterator lenderHint(uint64_t key) const {
    return lenders.empty() || std::prev(lenders.end())->first < key
               ? lenders.end()
               : lenders.lower_bound({key, nullptr});
  }

  // The cluster total changed: every score may have.
  // Sets node `n`'s total (harvesting: what its primary tenant leaves) and
  // the accounts that follow from it; false when it was already `total`.
  // The caller re-keys the queues.
  // The CRV's account of n's free vcores follows a change by `delta`
  // (kept on n while the CRV is dormant: deferFreeChanges).
  void crvFreeChanged(Node& n, int64_t delta) {
    if (crv.dormant()) {
      n.crv_deferred += delta;
    } else {
      crv.nodeFreeChanged(n.crv, delta);
    }
  }

  bool applyNodeTotal(Node& n, const Resource& total) {
    if (n.total == total) return false;
    cluster_total -= n.total;
    cluster_total += total;
    const int64_t old_free_vcores = n.free.vcores();
    n.total = total;
    n.free = total - n.used;
    room_slots.set(static_cast<size_t>(n.slot));
    syncRoom(n);
    crvFreeChanged(n, n.free.vcores() - old_free_vcores);
    return true;
  }

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
    // Users last: their key may depend on their apps' (userScore).
    for (auto& [path, q] : queues) {
      for (auto& [uid, u] : q->users) rekey(u.get());
    }
  }

  // reportDag's fair share of ad-hoc app `a`: the capacity reservations do
  // not use, split down the queue hierarchy by weight among the siblings in
  // use (with demand or usage; `a`'s own line always counts), then evenly
  // over the leaf's users and the user's apps (Carbyne §4.1: DRF between
  // users, then between a user's jobs). Every dimension is scaled by the same
  // fraction, extended resources included: Carbyne §4 packs the remaining DAG
  // at the share over all resources, and a dimension missing from the share
  // would count as zero, so no task asking for it would ever fit.
  // O(queues x depth + extended resources).
  Resource adhocFairShare(const App* a) const {
    const Resource adhoc = clampZero(cluster_total - (cluster_used - root->used));
    double frac = 1.0;
    for (const Entity* e = a->user->leaf; e->parent != nullptr; e = e->parent) {
      frac *= weightShare(e);
    }
    const User* u = a->user;
    frac /= static_cast<double>(std::max<size_t>(1, u->leaf->users.size())) *
            static_cast<double>(std::max<int32_t>(1, u->apps));
    auto scale = [frac](int64_t v) { return static_cast<int64_t>(static_cast<double>(v) * frac); };
    Resource share(scale(adhoc.memoryMib()), scale(adhoc.vcores()));
    for (const auto& [name, value] : adhoc.extended()) share.setExtended(name, scale(value));
    return share;
  }

  // `q`'s weight over the weights of its siblings in use and its own.
  double weightShare(const Entity* q) const {
    double sum = q->weight;
    for (const auto& [path, other] : queues) {
      if (other.get() == q || other->parent != q->parent) continue;
      if (other->has_demand || !other->used.isZero()) sum += other->weight;
    }
    return q->weight / sum;
  }

  // `p`'s (the app's leaf policy, policyOf) score of `a`. With an app
  // ordering: its hint, the longest expected run time of its pending asks
  // and, for a constraint-aware one, the CRV's waiting estimate of its hard
  // constraints. Without: the ordering score at weight 1.
  double appScore(const App* a, const PolicyPoints& p) const {
    if (p.apps == nullptr && p.constrained_apps == nullptr)
      return p.order->score(a->used, 1.0, cluster_total);
    Millis duration(0), wait(0);
    const bool waits = p.constrained_apps != nullptr;
    for (const Ask& ask : a->asks) {
      duration = std::max(duration, ask.req.expected_duration);
      if (waits) wait = std::max(wait, crv.estimatedWait(ask.req.constraints, ask.crv_resolved));
    }
    const AppInput in{a->used, a->hint, cluster_total, duration, a->since, a->pending};
    return waits ? p.constrained_apps->appScore(in, wait) : p.apps->appScore(in);
  }

  // Once per heartbeat, if the CRV moved: the keys of apps with hard
  // constraints whose leaf policy is constraint-aware follow its new
  // estimates (Phoenix §IV reordering); their users' keys follow (a
  // UserOrdering may read the best app's score).
  void rekeyConstrainedApps() {
    if (!crv_waits || crv.version() == crv_keyed) return;
    crv_keyed = crv.version();
    for (auto& [seq, a] : constrained_apps) {
      if (policyOf(a).constrained_apps == nullptr) continue;
      place(a, kParent);
      if (a->user != nullptr) place(a->user, kParent);
    }
  }

  // Keeps `a` in constrained_apps while it has a hard-constrained ask.
  void syncConstrained(App* a) {
    if (std::any_of(a->asks.begin(), a->asks.end(), [](const Ask& x) { return hasHard(x.req); })) {
      constrained_apps.emplace(a->seq, a);
    } else {
      constrained_apps.erase(a->seq);
    }
  }

  void addUsed(App* a, const Resource& r) {
    for (Entity* e = a; e != nullptr; e = e->parent) e->used += r;
  }
  void subUsed(App* a, const Resource& r) {
    for (Entity* e = a; e != nullptr; e = e->parent) e->used -= r;
  }

  // ---- asks ----

  // The container need of one grant of `r` (a whole gang for gangs).
  static Resource askNeed(const ResourceRequest& r) {
    return r.gang_size > 1 ? r.capability * r.gang_size : r.capability;
  }
  // An ask enters or leaves `a`'s list: the global shapes and the FitIndex of
  // `a`, its ancestors and (for reservation apps) reservation_fit.
  void addShape(App* a, const ResourceRequest& r) {
    shapes[{r.capability.memoryMib(), r.capability.vcores()}]++;
    const Resource need = askNeed(r);
    for (Entity* e = a; e != nullptr; e = e->parent) {
      e->fit.add(need);
      syncBounds(e);
    }
    if (a->res != nullptr) reservation_fit.add(need);
  }
  void removeShape(App* a, const ResourceRequest& r) {
    auto it = shapes.find({r.capability.memoryMib(), r.capability.vcores()});
    if (it != shapes.end() && --it->second == 0) shapes.erase(it);
    const Resource need = askNeed(r);
    for (Entity* e = a; e != nullptr; e = e->parent) {
      e->fit.remove(need);
      syncBounds(e);
    }
    if (a->res != nullptr) reservation_fit.remove(need);
  }
  // The index says something below `e` may be placeable on `n` (false:
  // nothing is; the full walk would visit and skip all of it). Deliberately
  // not sharpened with the guaranteed phase's "keeps the reservation within
  // its guarantee" test: findAsk starts a soft-constraint wait for an ask
  // that fits the node before that test, and skipping the reservation would
  // skip that side effect (the differential test caught it).
  bool mayPlace(const Entity* e, const Node& n) const { return e->fit.anyFits(n.free); }
  // Cheap pre-check: could any pending ask fit in `free`? (Extended resources
  // are checked later, per ask.)
  // The shapes are in memory order: the walk ends at the first with more
  // memory than `free` (at scale there are many, and most are too large for
  // a nearly full node).
  bool anyShapeFits(const Resource& free) const {
    for (const auto& [shape, n] : shapes) {
      if (shape.first > free.memoryMib()) return false;
      if (shape.second <= free.vcores()) return true;
    }
    return false;
  }

  // changeDemand plus the ask's share of the CRV.
  void askDemand(App* a, const ResourceRequest& r, int64_t delta) {
    changeDemand(a, r.capability, delta);
    crv.changeDemand(r.constraints, r.capability.vcores(), r.expected_duration, delta);
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

  // True if `ask` of `a` can be placed on `n` in `phase` (marks a soft-
  // constrained ask as waiting the first time a node misses its constraints).
  bool placeable(App* a, Ask& ask, Node& n, Phase phase, TimePoint now) {
    const ResourceRequest& r = ask.req;
    const Resource need = askNeed(r);
    if (!need.fitsIn(n.free)) return false;
    const uint8_t fit = constraintFit(ask, n);
    const bool soft_ok = (fit & ConstraintFit::kFitSoft) != 0;
    if ((fit & ConstraintFit::kFitHard) == 0) return false;
    if (!withinCaps(a, need)) return false;
    if (!soft_ok) {
      if (!ask.waiting) {
        ask.waiting = true;
        ask.wait_since = now;
      }
      if (now - ask.wait_since < opts.soft_constraint_delay) return false;
    }
    return phase != Phase::kGuaranteed || (a->res->used + need).fitsIn(a->res->guarantee);
  }

  // ConstraintFit bits of `ask`'s constraints on `n`, computed on the first
  // visit of the node since the last attribute change.
  uint8_t constraintFit(const Ask& ask, const Node& n) const {
    constexpr uint8_t kAll =
        ConstraintFit::kFitKnown | ConstraintFit::kFitHard | ConstraintFit::kFitSoft;
    if (ask.fit == nullptr) return kAll;
    ConstraintFit& f = *ask.fit;
    if (f.epoch != attrs_epoch) {
      f.by_slot.clear();
      f.epoch = attrs_epoch;
    }
    const size_t slot = static_cast<size_t>(n.slot);
    if (slot >= f.by_slot.size()) f.by_slot.resize(std::max(node_slots.size(), slot + 1), 0);
    uint8_t& bits = f.by_slot[slot];
    if (bits == 0) {
      bits = kAll;
      for (const auto& c : ask.req.constraints) {
        if (!matches(c, n.attrs))
          bits &=
              static_cast<uint8_t>(~(c.hard ? ConstraintFit::kFitHard : ConstraintFit::kFitSoft));
      }
    }
    return bits;
  }

  // The ConstraintFit shared by the asks with `constraints` (null for none).
  std::shared_ptr<ConstraintFit> fitOf(const std::vector<PlacementConstraint>& constraints) {
    if (constraints.empty()) return nullptr;
    std::string code;  // length-prefixed fields: equal codes iff equal lists
    auto field = [&code](const std::string& v) {
      code += std::to_string(v.size());
      code += ':';
      code += v;
    };
    for (const auto& c : constraints) {
      code += c.hard ? 'H' : 'S';
      code += std::to_string(static_cast<int>(c.op));
      field(c.key);
      code += std::to_string(c.values.size());
      code += '[';
      for (const auto& v : c.values) field(v);
    }
    std::weak_ptr<ConstraintFit>& slot = fits[code];
    std::shared_ptr<ConstraintFit> f = slot.lock();
    if (f != nullptr) return f;
    f = std::make_shared<ConstraintFit>();
    slot = f;
    if (fits.size() > 2 * std::max<size_t>(64, fits_live)) {
      std::erase_if(fits, [](const auto& kv) { return kv.second.expired(); });
      fits_live = fits.size();
    }
    return f;
  }

  // `need` more keeps every capped ad-hoc queue above `a` within its cap
  // (setQueueMaxResources). O(depth).
  static bool withinCaps(const App* a, const Resource& need) {
    if (a->user == nullptr) return true;
    for (const Entity* e = a->user->leaf; e != nullptr; e = e->parent) {
      const auto* q = static_cast<const Queue*>(e);
      if (q->max && (q->used.memoryMib() + need.memoryMib() > q->max->memoryMib() ||
                     q->used.vcores() + need.vcores() > q->max->vcores()))
        return false;
    }
    return true;
  }
  // A capped queue none of whose pending needs fits its headroom: nothing
  // below it can be granted now.
  static bool capFull(const Entity* e) {
    if (e->kind != Kind::kQueue) return false;
    const auto* q = static_cast<const Queue*>(e);
    return q->max && !e->fit.anyFitsMemVcores(*q->max - q->used);
  }

  // The ask of `a` to place on `n` in `phase`, or -1: the first placeable
  // one in priority order, unless the app's policy chooses among them
  // (AskChooser, bestAsk). Declined asks count only with `take_declined`.
  int findAsk(App* a, Node& n, Phase phase, TimePoint now, bool take_declined = false) {
    const PolicyPoints& p = policyOf(a);
    if (p.asks != nullptr) return bestAsk(a, *p.asks, n, phase, now, take_declined);
    if (p.long_cap != nullptr) return cappedAsk(a, *p.long_cap, n, phase, now);
    for (size_t i = 0; i < a->asks.size(); i++) {
      if (placeable(a, a->asks[i], n, phase, now)) return static_cast<int>(i);
    }
    return -1;
  }

  // Whether `r` is long work of a leaf under `cap` (LongWorkCap).
  static bool isLong(const LongWorkCap& cap, const ResourceRequest& r) {
    return cap.longTask() > Millis(0) && r.expected_duration > cap.longTask();
  }
  // findAsk under a LongWorkCap: the first placeable ask in priority order
  // that is not long work beyond the cap of a scarce kind `n` meets (each
  // kind's cap from its short share of the work granted, longShareOf).
  int cappedAsk(App* a, const LongWorkCap& cap, Node& n, Phase phase, TimePoint now) {
    const auto share_of = [&cap](double short_share) { return cap.longShareOf(short_share); };
    for (size_t i = 0; i < a->asks.size(); i++) {
      Ask& ask = a->asks[i];
      if (!placeable(a, ask, n, phase, now)) continue;
      if (!isLong(cap, ask.req) || crv.mayHoldLong(n.crv, askNeed(ask.req).vcores(), share_of))
        return static_cast<int>(i);
    }
    return -1;
  }

  // The placeable ask of `a` with the highest askScore of `p` on `n`
  // (earlier asks win ties), or -1. Without `take_declined`, in an ad-hoc
  // leaf, an ask scored AskChooser::kDecline is passed over, and an app
  // whose placeable asks are all declined joins `declined` (takeDeclined,
  // packAcross offer them later in the phase). O(asks of `a`).
  int bestAsk(App* a, const AskChooser& p, Node& n, Phase phase, TimePoint now,
              bool take_declined) {
    int best = -1;
    double best_score = 0.0;
    bool any_declined = false;
    const bool may_decline = !take_declined && a->user != nullptr;
    for (size_t i = 0; i < a->asks.size(); i++) {
      if (!placeable(a, a->asks[i], n, phase, now)) continue;
      const Resource need = askNeed(a->asks[i].req);
      const std::string& id = a->asks[i].req.request_id;
      const double sc = p.askScore({a->used, a->hint, need, n.free, n.total, id, runningOf(a, id)});
      if (sc == AskChooser::kDecline && may_decline) {
        any_declined = true;
        continue;
      }
      if (best < 0 || sc > best_score) {
        best = static_cast<int>(i);
        best_score = sc;
      }
    }
    if (best < 0 && any_declined) declined.push_back(a);
    return best;
  }

  // The app of leaf `leaf` and its ask to take on `n` from the apps that
  // declined every placeable ask there in this phase, once the rest of the
  // leaf's walk found nothing placeable (AskChooser::kDecline), or null: in
  // a packing leaf by packScore (packTier), else the first such app's first
  // placeable ask in priority order.
  App* takeDeclined(Entity* leaf, Node& n, Phase phase, TimePoint now, int* ask) {
    auto of_leaf = [leaf](const App* a) { return a->user != nullptr && a->user->leaf == leaf; };
    const auto first = std::find_if(declined.begin(), declined.end(), of_leaf);
    if (first == declined.end()) return nullptr;
    if (const CrossAppPacker* pk = policyOf(*first).pack; pk != nullptr)
      return packTier(leaf, leaf->children, *pk, n, phase, now, ask);
    for (App* a : declined) {
      if (!of_leaf(a) || !mayPlace(a, n)) continue;
      *ask = findAsk(a, n, phase, now, true);
      if (*ask >= 0) return a;
    }
    return nullptr;
  }

  // The CrossAppPacker of the leaf whose users `h` orders, when its best
  // user `top` (with something placeable) is in the packing tier; else null.
  const CrossAppPacker* packerAt(const Entity* top, const EntityHeap& h) const {
    if (top->kind != Kind::kUser) return nullptr;
    const CrossAppPacker* pk = policyOf(top).pack;
    return pk != nullptr && h.topKey().score >= pk->packFrom() ? pk : nullptr;
  }

  // CrossAppPacker: among the apps of every user left in `users` (all at or
  // beyond the packing tier) and the apps of `leaf` that declined their
  // asks on `n` in this phase (AskChooser::kDecline), the placeable ask on
  // `n` with the highest packScore (ties: the lower app key, then the
  // earlier ask), or null. O(apps x asks); apps and users with no need that
  // fits are skipped by the fit index.
  App* packAcross(const Entity* leaf, EntityHeap& users, const CrossAppPacker& pk, Node& n,
                  Phase phase, TimePoint now, int* ask) {
    App* best = nullptr;
    double best_score = 0;
    Key best_key;
    auto consider = [&](App* a, const Key& k) {
      if (!mayPlace(a, n)) return;
      for (size_t j = 0; j < a->asks.size(); j++) {
        if (!placeable(a, a->asks[j], n, phase, now)) continue;
        // askNeed without its copy for a single container (the common case).
        const ResourceRequest& req = a->asks[j].req;
        const Resource gang = req.gang_size > 1 ? askNeed(req) : Resource();
        const double sc = pk.packScore(
            {a->used, a->hint, req.gang_size > 1 ? gang : req.capability, n.free, n.total});
        if (best == nullptr || sc > best_score || (sc == best_score && k < best_key)) {
          best = a;
          best_score = sc;
          best_key = k;
          *ask = static_cast<int>(j);
        }
      }
    };
    for (size_t u = 0; u < users.size(); u++) {
      Entity* user = users.at(u);
      if (!mayPlace(user, n)) continue;
      for (size_t i = 0; i < user->children.size(); i++)
        consider(static_cast<App*>(user->children.at(i)), user->children.keyAt(i));
    }
    for (App* a : declined) {
      if (a->user != nullptr && a->user->leaf == leaf) consider(a, key(a, kParent));
    }
    return best;
  }

  // Descends the heap to the best app with an ask placeable on `n`. Subtrees
  // with nothing placeable are taken out of their heaps for the rest of the
  // phase (restoreSkipped puts them back). In a leaf whose policy packs
  // across apps (CrossAppPacker), once the best user is in the packing tier
  // the app comes from packAcross; when nothing there is placeable the leaf
  // is skipped as a whole.
  App* descend(EntityHeap& h, Node& n, Phase phase, TimePoint now, int* ask) {
    while (!h.empty()) {
      Entity* e = h.top();
      if (phase == Phase::kAdhoc && e->kind == Kind::kUser && n.resv_app == nullptr)
        maybeReserve(e, h, n, now);
      if (!mayPlace(e, n) || capFull(e)) {
        // Nothing below fits (the node, or a queue's cap): skipped without
        // visiting its apps.
      } else if (const CrossAppPacker* pk = packerAt(e, h); pk != nullptr) {
        return packTier(e->parent, h, *pk, n, phase, now, ask);
      } else if (e->kind == Kind::kApp) {
        *ask = findAsk(static_cast<App*>(e), n, phase, now);
        if (*ask >= 0) return static_cast<App*>(e);
      } else if (App* a = descendInto(e, n, phase, now, ask)) {
        return a;
      }
      h.erase(e);
      e->skipped[h.slot()] = true;
      skipped.emplace_back(&h, e);
    }
    return nullptr;
  }

  // Whether, during a phase, only descend reads the heap of `e`'s children
  // (their order and which are left): then a child with nothing placeable
  // may stay in the heap, flagged skipped (descendInPlace), instead of
  // leaving it. Not so for a leaf's users or a user's apps when the leaf's
  // policy packs across apps (packerAt, packAcross read the heap), with
  // node reservations (maybeReserve reads its top), or for a user's apps
  // under a UserOrdering (a user's score reads its best app's key).
  bool skipsInPlace(const Entity* e) const {
    if (e->kind == Kind::kReservation) return true;
    if (opts.node_reservation.enabled) return false;
    if (e->kind == Kind::kQueue) {
      const auto* q = static_cast<const Queue*>(e);
      if (!q->leaf) return true;
      return (q->policy != nullptr ? q->points : points).pack == nullptr;
    }
    if (e->kind == Kind::kUser) {
      const PolicyPoints& p = policyOf(e);
      return p.pack == nullptr && p.users == nullptr;
    }
    return false;
  }

  // descend over a heap that only descend reads (skipsInPlace, and a
  // phase's heap: phaseInPlace): the same visits in the same order, but a child with nothing
  // placeable stays in the heap, flagged skipped (or, when nothing below it fits the node, not even
  // flagged), instead of being erased and pushed back by restoreSkipped (which then only re-keys
  // it). The heap's entries are visited in key order by a best-first walk of the heap's tree from
  // its root (a child's key is never below its parent's), passing over flagged entries and those
  // with nothing below that fits the node (h.mayFit, then mayPlace): the others come in the order
  // successive tops would (KeyFrontier holds the entries still to visit). The heap does not change
  // during the walk (grants come after it), and a flagged entry's key is left as it was (place
  // skips it), which keeps the heap ordered.
  App* descendInPlace(EntityHeap& h, Node& n, Phase phase, TimePoint now, int* ask) {
    if (h.empty()) return nullptr;
    KeyFrontier<Key>& fr = takeFrontier(h, n);
    App* found = nullptr;
    const auto may_fit = [&h, &n](size_t i) { return h.mayFit(i, n.free); };
    while (!fr.empty()) {
      if (visitInPlace(h, fr.top(), n, phase, now, ask, &found)) break;
      // Its children come after it in key order: added once it is passed
      // over (a walk that ends at it never needs them).
      fr.passTopOf(h, may_fit);
    }
    frontier_depth--;
    return found;
  }

  // A frontier for a walk of `h` from its root on node `n`
  // (frontiers[frontier_depth], then one level deeper); the walk gives it
  // back with frontier_depth--. Entries with nothing below that fits the
  // node (h.mayFit) never join it (KeyFrontier::offer): the walk would pass
  // over them without reading their entities (visitInPlace).
  KeyFrontier<Key>& takeFrontier(const EntityHeap& h, const Node& n) {
    if (frontiers.size() <= frontier_depth) frontiers.emplace_back();
    KeyFrontier<Key>& fr = frontiers[frontier_depth++];
    fr.startAt(h, [&h, &n](size_t i) { return h.mayFit(i, n.free); });
    return fr;
  }

  // Visits entry `i` of `h` in an in-place walk (descendInPlace): true when
  // it gives the app (`*found`). An entry with nothing below that fits the
  // node is passed over and not flagged either: within a phase a heap's
  // walks see the node's free room only shrink and the needs below it only
  // leave, so every later walk of the phase finds the same, and
  // restoreSkipped has nothing to re-key. h.mayFit reads that from the
  // heap's entry: most entries a walk passes over it never reads.
  bool visitInPlace(EntityHeap& h, uint32_t i, Node& n, Phase phase, TimePoint now, int* ask,
                    App** found) {
    Entity* e = h.at(i);
    const Slot slot = h.slot();
    if (!h.mayFit(i, n.free) || e->skipped[slot] || !mayPlace(e, n)) return false;
    if (capFull(e)) {
      // Nothing below fits a queue's cap.
    } else if (e->kind == Kind::kApp) {
      *ask = findAsk(static_cast<App*>(e), n, phase, now);
      if (*ask >= 0) {
        *found = static_cast<App*>(e);
        return true;
      }
    } else if (App* a = descendInto(e, n, phase, now, ask)) {
      *found = a;
      return true;
    }
    e->skipped[slot] = true;
    skipped.emplace_back(&h, e);
    return false;
  }

  // ---- node reservations (NodeReservationOptions) ----

  // `user`, the best user left in its leaf's heap `h`, in a leaf that
  // reserves nodes (NodeReservationOptions::enabled, or its policy's
  // CrossAppPacker::reservesNodes): reserves `n` for its best app when none
  // of that app's pending needs fits the node's free room (in a packing
  // leaf, with packing_tier_only or by its policy, only from the packing
  // tier on) and the app holds fewer than its bound of nodes. A reservation
  // of the packing tier keeps its room from the leaf's packing (packTier);
  // any other keeps it from the rest of the leaf's walk at once
  // (descendInto gives it back).
  void maybeReserve(Entity* user, const EntityHeap& h, Node& n, TimePoint now) {
    const CrossAppPacker* pk = policyOf(user).pack;
    const bool by_policy = pk != nullptr && pk->reservesNodes();
    if (!by_policy && !opts.node_reservation.enabled) return;
    const bool packing = pk != nullptr && (by_policy || opts.node_reservation.packing_tier_only);
    if (packing && h.topKey().score < pk->packFrom()) return;
    if (user->children.empty()) return;
    auto* a = static_cast<App*>(user->children.top());
    if (a->fit.anyFits(n.free)) return;
    const Resource need = a->fit.largestWithin(n.total);
    if (need.isZero() || !withinCaps(a, need)) return;
    const auto bound = static_cast<size_t>(
        std::ceil(opts.node_reservation.reservable_nodes * static_cast<double>(nodes.size())));
    if (a->reserved.size() >= bound) return;
    n.resv_app = a;
    n.resv_need = need;
    n.resv_until = now + opts.node_reservation.timeout;
    n.resv_packing = packing;
    a->reserved.push_back(&n);
    reserved_nodes++;
    if (!packing) keepReserved(n);
  }

  // Takes the room the reservation keeps out of n.free until releaseKept.
  void keepReserved(Node& n) {
    const Resource kept = Resource::min(n.free, n.resv_need);
    n.free -= kept;
    syncRoom(n);
    n.resv_kept += kept;
  }

  void releaseKept(Node& n) {
    n.free += n.resv_kept;
    syncRoom(n);
    n.resv_kept = Resource();
  }

  void unreserve(Node& n) {
    App* a = n.resv_app;
    if (a == nullptr) return;
    a->reserved.erase(std::find(a->reserved.begin(), a->reserved.end(), &n));
    n.resv_app = nullptr;
    n.resv_need = Resource();
    n.resv_packing = false;
    reserved_nodes--;
  }

  // At the start of `n`'s ad-hoc phases: the reservation ends when it timed
  // out or its app has no pending need that fits the node. Its app is
  // served, and its room kept, where the walk reaches the part of its leaf
  // the reservation is kept from (packTier, descendInto).
  void expireReservation(Node& n, TimePoint now) {
    if (now >= n.resv_until || !n.resv_app->fit.anyFits(n.total)) unreserve(n);
  }

  // The ad-hoc leaf holding the reservation of `n`, if it is kept from the
  // part of the walk `packing` names (the leaf's packing tier, or its whole
  // walk); else null.
  const Entity* reservingLeaf(const Node& n, Phase phase, bool packing) const {
    if (phase != Phase::kAdhoc || n.resv_app == nullptr || n.resv_packing != packing)
      return nullptr;
    const User* u = n.resv_app->user;
    return u == nullptr ? nullptr : u->leaf;
  }

  // The reserved app of `n` and its ask once one fits the node's whole
  // free room (the reservation ends), else null. The node is kept for the
  // app, so an ask it declines (AskChooser::kDecline) is taken too.
  App* serveReserved(Node& n, Phase phase, TimePoint now, int* ask) {
    App* a = n.resv_app;
    if (!a->fit.anyFits(n.free)) return nullptr;
    *ask = findAsk(a, n, phase, now, true);
    if (*ask < 0) return nullptr;
    unreserve(n);
    return a;
  }

  // The packing tier of leaf `leaf`, whose users left in the walk `users`
  // orders: when the node is reserved for this tier of this leaf, its app
  // is served first once its ask fits, else the room it keeps is withheld
  // from the packing (NodeReservationOptions: apps served before the
  // packing tier see the whole room).
  App* packTier(const Entity* leaf, EntityHeap& users, const CrossAppPacker& pk, Node& n,
                Phase phase, TimePoint now, int* ask) {
    packed = true;
    if (reservingLeaf(n, phase, true) != leaf)
      return packAcross(leaf, users, pk, n, phase, now, ask);
    if (App* a = serveReserved(n, phase, now, ask)) return a;
    keepReserved(n);
    App* a = packAcross(leaf, users, pk, n, phase, now, ask);
    releaseKept(n);
    return a;
  }

  // descend into `e`'s children; into the leaf holding a reservation that
  // is kept from its whole walk, its app first once its ask fits, else with
  // the room it keeps withheld. In a leaf, the asks its apps declined come
  // last (takeDeclined) unless the walk reached its packing tier, which
  // offers them.
  App* descendInto(Entity* e, Node& n, Phase phase, TimePoint now, int* ask) {
    if (e->kind != Kind::kQueue || !static_cast<const Queue*>(e)->leaf)
      return descendChildren(e, n, phase, now, ask);
    if (reservingLeaf(n, phase, false) == e) {
      if (App* a = serveReserved(n, phase, now, ask)) return a;
      keepReserved(n);
    }
    packed = false;
    App* a = descendChildren(e, n, phase, now, ask);
    if (a == nullptr && !packed && !declined.empty()) a = takeDeclined(e, n, phase, now, ask);
    releaseKept(n);
    return a;
  }

  App* descendChildren(Entity* e, Node& n, Phase phase, TimePoint now, int* ask) {
    return skipsInPlace(e) ? descendInPlace(e->children, n, phase, now, ask)
                           : descend(e->children, n, phase, now, ask);
  }

  void restoreSkipped() {
    for (auto it = skipped.rbegin(); it != skipped.rend(); ++it) {
      Slot s = it->first->slot();
      it->second->skipped[s] = false;
      place(it->second, s);
    }
    // A user's key may depend on its best app (UserOrdering::userScore):
    // re-key the users of restored apps now that all of them are back.
    // Once per run of apps of one user: placing is idempotent (nothing
    // changes between the calls), and a node's phase may skip thousands of
    // one user's apps.
    const Entity* last = nullptr;
    for (const auto& [h, e] : skipped) {
      if (e->kind != Kind::kApp) continue;
      User* u = static_cast<App*>(e)->user;
      if (u == nullptr || u == last) continue;
      place(u, kParent);
      last = u;
    }
    skipped.clear();
    declined.clear();
  }

  // ---- containers ----

  Allocation toAllocation(const Container& c) const {
    Allocation a;
    a.container = containerId(c);
    a.slot = ContainerSlot{c.slot, c.generation};
    a.app = c.app->id;
    a.node = c.node->id;
    a.resource = c.resource;
    a.priority = c.priority;
    a.request_id = requestIdOf(c);
    if (c.app->res != nullptr) a.reservation = c.app->res->id;
    a.am = c.am;
    return a;
  }

  // The first entry of App::running_by_request not below `request_id`.
  template <typename Vec>
  static auto requestEntry(Vec& v, std::string_view request_id) {
    return std::lower_bound(v.begin(), v.end(), request_id,
                            [](const auto& e, std::string_view id) { return e.first < id; });
  }

  // App::running_by_request: `delta` containers of `request_id` start (> 0)
  // or end (< 0). Empty ids are not counted. O(log entries).
  static void countRunning(App* a, const std::string& request_id, int64_t delta) {
    if (request_id.empty()) return;
    auto& v = a->running_by_request;
    auto it = requestEntry(v, request_id);
    if (it == v.end() || it->first != request_id) it = v.insert(it, {request_id, 0});
    it->second += delta;
    if (it->second <= 0) v.erase(it);
  }

  // The live containers of `a` granted for `request_id` (0 for an empty id).
  static int64_t runningOf(const App* a, std::string_view request_id) {
    if (request_id.empty()) return 0;
    auto it = requestEntry(a->running_by_request, request_id);
    return it != a->running_by_request.end() && it->first == request_id ? it->second : 0;
  }

  // `id_no`: the grant's sequence number (0 for a recovered container, whose
  // `id` is given).
  Container* insertContainer(const ContainerId& id, uint64_t id_no, App* a, Node& n,
                             const Resource& r, int32_t priority, const std::string& request_id,
                             bool am) {
    std::unordered_map<ContainerId, int32_t>::iterator it;
    if (opts.index_container_ids) {
      bool fresh;
      std::tie(it, fresh) = containers.try_emplace(id, 0);
      if (!fresh) return nullptr;
    }
    int32_t slot;
    if (!free_container_slots.empty()) {
      slot = free_container_slots.back();
      free_container_slots.pop_back();
    } else {
      slot = static_cast<int32_t>(container_pool.size());
      container_pool.emplaceBack();
    }
    if (opts.index_container_ids) it->second = slot;
    // Every field is set: a reused slot keeps only its generation (and its
    // names' capacity).
    Container& c = container_pool[static_cast<size_t>(slot)];
    c.named = !(id.empty() && request_id.empty());
    if (c.named) {
      if (container_names.size() <= static_cast<size_t>(slot)) {
        container_names.resize(static_cast<size_t>(slot) + 1);
      }
      ContainerNames& names = container_names[static_cast<size_t>(slot)];
      names.id = id;
      names.request_id = request_id;
    }
    c.id_no = id_no;
    c.slot = slot;
    c.live = true;
    c.preempting = false;
    c.kill_sent = false;
    c.long_work = false;
    c.source = nullptr;
    c.kill_deadline = TimePoint();
    c.node_link = c.app_link = c.cand_link = Link();
    c.app = a;
    c.node = &n;
    c.resource = r;
    c.priority = priority;
    c.am = am;
    c.order = ++order_seq;
    n.containers.pushBack(&c);
    a->containers.pushBack(&c);
    countRunning(a, request_id, 1);
    if (a->res != nullptr) c.source = sourceOf(a->res, r);
    if (!am) candsOf(&c).pushBack(&c);
    n.used += r;
    n.free -= r;
    syncRoom(n);
    crvFreeChanged(n, -r.vcores());
    cluster_used += r;
    addUsed(a, r);
    return &c;
  }

  // The id of the container granted to `a` as grant number `no`:
  // "<app>_<container_id_epoch>_<no>".
  ContainerId formatId(const App* a, uint64_t no) const {
    // One allocation: room for the app id and both numbers.
    std::string s;
    s.reserve(a->id.value().size() + 42);
    s += a->id.value();
    s += '_';
    s += std::to_string(opts.container_id_epoch);
    s += '_';
    s += std::to_string(no);
    return ContainerId(std::move(s));
  }
  ContainerId containerId(const Container& c) const {
    if (c.named) {
      const ContainerId& id = container_names[static_cast<size_t>(c.slot)].id;
      if (!id.empty()) return id;
    }
    return formatId(c.app, c.id_no);
  }

  // Grants one container (or one gang) of `a->asks[idx]` on `n`.
  void grant(App* a, int idx, Node& n, NodeUpdateResult& out) {
    Ask& ask = a->asks[static_cast<size_t>(idx)];
    int32_t g = std::max(1, ask.req.gang_size);
    const LongWorkCap* cap = policyOf(a).long_cap;
    const bool long_work = cap != nullptr && isLong(*cap, ask.req);
    if (cap != nullptr && cap->longTask() > Millis(0) && !ask.req.constraints.empty()) {
      // The kinds' short shares (LongWorkCap::longShareOf).
      crv.workGranted(
          ask.req.constraints,
          static_cast<double>(g) *
              static_cast<double>(std::max<int64_t>(1, ask.req.capability.vcores())) *
              static_cast<double>(std::max<int64_t>(0, ask.req.expected_duration.count())),
          long_work, last_now, cap->shortShareHalfLife());
    }
    for (int32_t i = 0; i < g; i++) {
      Container* c = nullptr;
      while (c == nullptr) {
        const uint64_t no = ++id_seq;
        // Without the index nothing looks the id up: it is formatted when
        // an Allocation or a notice names the container.
        c = insertContainer(opts.index_container_ids ? formatId(a, no) : ContainerId(), no, a, n,
                            ask.req.capability, ask.req.priority, ask.req.request_id, false);
      }
      if (long_work) {
        c->long_work = true;
        crv.longHeldChanged(n.crv, c->resource.vcores());
      }
      if (slot_out != nullptr) {
        slot_out->grants.push_back(SlotGrant{ContainerSlot{c->slot, c->generation}, appSlotOf(a),
                                             c->resource, c->priority});
      } else {
        out.allocations.push_back(toAllocation(*c));
      }
    }
    ask.req.count -= g;
    // Delay scheduling: the wait ends when the ask is served where it
    // prefers; after a wait expired, its remaining containers go anywhere.
    if (ask.waiting &&
        std::all_of(ask.req.constraints.begin(), ask.req.constraints.end(),
                    [&n](const PlacementConstraint& c) { return c.hard || matches(c, n.attrs); })) {
      ask.waiting = false;
    }
    askDemand(a, ask.req, -g);
    if (ask.req.count == 0) {
      removeShape(a, ask.req);
      a->asks.erase(a->asks.begin() + idx);
      syncConstrained(a);
    }
    refresh(a);
  }

  // Takes `c` out of every account and the container map.
  Allocation freeContainer(Container* c) {
    Allocation out = toAllocation(*c);
    dropContainer(c);
    return out;
  }

  // freeContainer without the Allocation (by-slot callers hold it).
  void dropContainer(Container* c) {
    App* a = c->app;
    unaccount(c);
    refresh(a);
  }
  // dropContainer with its app's refresh deferred to flushStale: the ends
  // of one instant (many, at scale) then re-key each app once and their
  // users, queues and reservations once, not once per end.
  void dropContainerDeferred(Container* c) {
    App* a = c->app;
    unaccount(c);
    if (!a->stale) {
      a->stale = true;
      stale.push_back(a);
    }
  }
  // dropContainer but its app's refresh.
  void unaccount(Container* c) {
    App* a = c->app;
    Node* n = c->node;
    n->containers.erase(c);
    a->containers.erase(c);
    countRunning(a, requestIdOf(*c), -1);
    if (!c->preempting && !c->am) candsOf(c).erase(c);
    n->used -= c->resource;
    n->free += c->resource;
    room_slots.set(static_cast<size_t>(n->slot));
    crvFreeChanged(*n, c->resource.vcores());
    if (c->long_work) crv.longHeldChanged(n->crv, -c->resource.vcores());
    cluster_used -= c->resource;
    subUsed(a, c->resource);
    if (c->preempting) {
      n->noticed -= c->resource;
      if (a->res != nullptr) a->res->preempting -= c->resource;
      if (!c->kill_sent) unmark(c);
      dropNotice(c);
    }
    syncRoom(*n);
    if (opts.index_container_ids)
      containers.erase(container_names[static_cast<size_t>(c->slot)].id);
    c->live = false;
    c->generation++;
    free_container_slots.push_back(c->slot);
  }

  // ---- scheduling ----

  // The index says some pending ask of the phase's hierarchy fits `n` (the
  // ad-hoc tree for kAdhoc, the reservations otherwise). Only asks leave and
  // free room only shrinks during a heartbeat, so a false stays false.
  bool phaseMayPlace(Phase phase, const Node& n) const {
    return phase == Phase::kAdhoc ? root->fit.anyFits(n.free) : reservation_fit.anyFits(n.free);
  }

  // A phase's heap `h` (the guaranteed or overage reservations, or the
  // ad-hoc root's children) walked in place (descendInPlace), unless its
  // entries are users (a root without queues below it: node reservations
  // and packing read a leaf's heap of users).
  bool phaseInPlace(const EntityHeap& h) const { return &h != &root->children || !root->leaf; }

  void runPhase(Phase phase, EntityHeap& h, Node& n, TimePoint now, NodeUpdateResult& out) {
    if (!phaseMayPlace(phase, n)) return;
    int ask = -1;
    const bool in_place = phaseInPlace(h);
    while (!h.empty() && anyShapeFits(n.free)) {
      App* a = in_place ? descendInPlace(h, n, phase, now, &ask) : descend(h, n, phase, now, &ask);
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
    // A side whose asks cannot fit is as good as empty: the full walk would
    // skip each of its entities in turn.
    const bool adhoc_on = phaseMayPlace(Phase::kAdhoc, n);
    const bool overage_on = phaseMayPlace(Phase::kOverage, n);
    int ask = -1;
    if (phaseInPlace(adhoc)) {
      while (anyShapeFits(n.free)) {
        App* app = sharedInPlace(n, adhoc_on, overage_on, now, &ask);
        if (app == nullptr) break;
        grant(app, ask, n, out);
      }
      restoreSkipped();
      return;
    }
    auto live = [](bool on, const EntityHeap& h) { return on && !h.empty(); };
    while (anyShapeFits(n.free) && (live(adhoc_on, adhoc) || live(overage_on, overage))) {
      EntityHeap* h = &adhoc;
      if (!live(adhoc_on, adhoc)) {
        h = &overage;
      } else if (live(overage_on, overage)) {
        const Key& a = adhoc.topKey();
        const Key& o = overage.topKey();
        if (std::tie(o.score, o.seq) < std::tie(a.score, a.seq)) h = &overage;
      }
      Entity* e = h->top();
      const Phase phase = h == &adhoc ? Phase::kAdhoc : Phase::kOverage;
      App* app = mayPlace(e, n) ? descendInto(e, n, phase, now, &ask) : nullptr;
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

  // One walk of runShared in place: the ad-hoc root's children (when
  // `adhoc_on`) and the overage reservations (when `overage_on`), each in
  // its key order (as descendInPlace walks one heap), merged as runShared
  // takes their tops (the smaller score, then creation order); the app and
  // its ask (`*ask`) the first entry with something placeable gives, or
  // null. runShared's erased tops are the entries flagged skipped. An entry
  // left in the walk of a side whose order is that of its score and
  // creation (every key of the side in tier 0: the ad-hoc side always)
  // changes no comparison of the merge once passed over, so such a side
  // passes over flagged entries and those with nothing below that fits
  // the node (h.mayFit, never joining the frontier) in place. With tier 1
  // keys in the overage heap, a top runShared would not erase (nothing
  // fits below it, not visited yet) can still hold back the ad-hoc side:
  // that side keeps such entries in the frontier, flags every entry it
  // visits as runShared erases it, and only flagged entries never join.
  App* sharedInPlace(Node& n, bool adhoc_on, bool overage_on, TimePoint now, int* ask) {
    EntityHeap& adhoc = root->children;
    const bool overage_ordered = overage.tiered() == 0;
    const auto may_fit = [&n](const EntityHeap& h) {
      return [&h, &n](size_t i) { return h.mayFit(i, n.free); };
    };
    const auto unflagged = [](const EntityHeap& h) {
      return [&h](size_t i) { return !h.at(i)->skipped[kOverage]; };
    };
    KeyFrontier<Key>& fa = takeFrontier(adhoc, n);
    if (frontiers.size() <= frontier_depth) frontiers.emplace_back();
    KeyFrontier<Key>& fo = frontiers[frontier_depth++];
    if (overage_ordered) {
      fo.startAt(overage, may_fit(overage));
    } else {
      fo.startAt(overage, unflagged(overage));
    }
    if (!adhoc_on) fa.clear();
    if (!overage_on) fo.clear();
    App* found = nullptr;
    while (!fa.empty() || !fo.empty()) {
      bool take_overage = fa.empty();
      if (!fa.empty() && !fo.empty()) {
        const Key& a = fa.topKey();
        const Key& o = fo.topKey();
        take_overage = std::tie(o.score, o.seq) < std::tie(a.score, a.seq);
      }
      if (!take_overage) {
        if (visitShared(adhoc, fa.top(), n, Phase::kAdhoc, now, ask, false, &found)) break;
        fa.passTopOf(adhoc, may_fit(adhoc));
      } else if (overage_ordered) {
        if (visitShared(overage, fo.top(), n, Phase::kOverage, now, ask, false, &found)) break;
        fo.passTopOf(overage, may_fit(overage));
      } else {
        if (visitShared(overage, fo.top(), n, Phase::kOverage, now, ask, true, &found)) break;
        fo.passTopOf(overage, unflagged(overage));
      }
    }
    frontier_depth -= 2;
    return found;
  }

  // Visits entry `i` of `h` in sharedInPlace: runShared's visit of a top
  // (no queue cap checked). An entry with nothing below that fits the node
  // is passed over without flagging it, unless `flag_all` (then every entry
  // that gives no app is flagged, as runShared erases it).
  bool visitShared(EntityHeap& h, uint32_t i, Node& n, Phase phase, TimePoint now, int* ask,
                   bool flag_all, App** found) {
    Entity* e = h.at(i);
    const Slot slot = h.slot();
    if (e->skipped[slot]) return false;
    const bool fits = h.mayFit(i, n.free) && mayPlace(e, n);
    if (!fits && !flag_all) return false;
    if (fits) {
      if (App* a = descendInto(e, n, phase, now, ask)) {
        *found = a;
        return true;
      }
    }
    e->skipped[slot] = true;
    skipped.emplace_back(&h, e);
    return false;
  }

  // The containers of `n` whose grace ended by `now`, in the node's
  // allocation order: killed if still needed (stillNeeded), else their notice
  // is withdrawn. Before the node's kill_due no grace has ended and nothing
  // is read (a scan at every heartbeat of a node under notice led the
  // simulator's profile at 5,000 nodes); then the node's containers under
  // notice (notice_list, not all its containers) are read, and kill_due set
  // to the earliest deadline left pending. The node's container list is in
  // allocation order (`order`), so the due ones are re-checked by `order`.
  void collectKills(Node& n, TimePoint now, NodeUpdateResult& out) {
    if (n.marked == 0 || now < n.kill_due) return;
    n.kill_due = TimePoint::max();
    std::vector<Container*>& due = kills_due;
    due.clear();
    for (Container* c : n.notice_list) {
      if (c->kill_deadline > now) {
        n.kill_due = std::min(n.kill_due, c->kill_deadline);
      } else {
        due.push_back(c);
      }
    }
    std::sort(due.begin(), due.end(),
              [](const Container* a, const Container* b) { return a->order < b->order; });
    // A kill changes nothing the starved containers are collected from: after
    // one, the next re-check's are those of the re-check before (RecheckMemo).
    bool killed = false;
    for (Container* c : due) {
      if (!stillNeeded(c, killed)) {
        withdraw(c);
        killed = false;
        continue;
      }
      killed = true;
      c->kill_sent = true;
      unmark(c);
      if (slot_out != nullptr) {
        slot_out->to_kill.push_back(ContainerSlot{c->slot, c->generation});
      } else {
        out.to_kill.push_back(toAllocation(*c));
      }
    }
  }

  // Whether noticed `c` must still make room: its reservation (if any) stays
  // within its guarantee without it, and preemptIfNeeded's shortfall would not
  // be covered without its notice (the other notices, killed or not, count).
  // With `after_kill`, the last call said true and only the kill of its
  // container (collectKills) happened since.
  bool stillNeeded(const Container* c, bool after_kill = false) const {
    const Reservation* r = c->app->res;
    if (r != nullptr && !r->guarantee.fitsIn(r->used - r->preempting)) return false;
    return !need_total.isZero() && cover(c, /*only_whether=*/true, after_kill) > 0;
  }

  // Undoes mark(c) as if no notice had been sent: `c` is a candidate again.
  // The AM is not told (notices are advisory); one not yet taken is dropped.
  void withdraw(Container* c) {
    App* a = c->app;
    c->preempting = false;
    c->kill_deadline = TimePoint();
    unmark(c);
    c->node->noticed -= c->resource;
    syncRoom(*c->node);
    reinsertCand(c);
    dropNotice(c);
    if (a->res == nullptr) return;
    a->res->preempting -= c->resource;
    syncPreemption(a->res);
  }

  // Puts withdrawn `c` back on its candidate list in allocation order. The
  // position is found from its hint, the older neighbour it had when marked
  // (following the hints of neighbours under notice themselves), then
  // forward past members older than `c` reinserted since: O(those) instead
  // of a search of the list (a withdrawal in the middle of a list of
  // thousands led the simulator's profile). A hint that is gone (its
  // container ended) falls back to CList::insertByOrder. Same place either
  // way: the list is in allocation order.
  void reinsertCand(Container* c) {
    CList<& Container::cand_link>& list = candsOf(c);
    Container* after = nullptr;
    for (ContainerSlot h = c->cand_hint;;) {
      if (h.index < 0) break;  // no older member then: search from the head
      Container* x = slotContainer(h);
      if (x == nullptr || x->am || &candsOf(x) != &list) {
        list.insertByOrder(c);
        return;
      }
      if (!x->preempting) {
        after = x;
        break;
      }
      h = x->cand_hint;
    }
    for (Container* next = after != nullptr ? after->cand_link.next : list.head;
         next != nullptr && next->order < c->order; next = next->cand_link.next) {
      after = next;
    }
    list.insertAfter(c, after);
    // O(1): the list stays in allocation order around `c`.
    MORPHEUS_CHECK(c->cand_link.next == nullptr || c->cand_link.next->order > c->order,
                   "a withdrawn candidate reinserted out of allocation order");
  }

  void dropNotice(const Container* c) {
    auto& ns = c->app->notices;
    if (ns.empty()) return;
    const ContainerSlot slot{c->slot, c->generation};
    const auto gone = std::remove_if(ns.begin(), ns.end(), [&slot](const App::Notice& p) {
      return p.container.index == slot.index && p.container.generation == slot.generation;
    });
    untaken_notices -= ns.end() - gone;
    ns.erase(gone, ns.end());
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
  // pending need that keeps it within its guarantee, as many as its demand
  // asks for and its guarantee holds. A reservation none of whose needs fits
  // its guarantee is left out (the room would go to ad-hoc work first).
  // The heap is put in creation order first, as plain pairs: a Starved
  // holds a Resource, whose moves took most of the sort's time at 50,000
  // nodes. That order is kept until an entity joins or leaves the heap
  // (EntityHeap::membership): most re-checks find the same members, whose
  // creation order does not change (the sort was 5% of the simulator's
  // 50,000-node evaluation).
  void collectStarved() const {
    std::vector<std::pair<uint64_t, Reservation*>>& by_seq = starved_by_seq;
    if (starved_by_seq_of != guaranteed.membership()) {
      by_seq.clear();
      for (size_t i = 0; i < guaranteed.size(); i++) {
        auto* r = static_cast<Reservation*>(guaranteed.at(i));
        by_seq.emplace_back(r->seq, r);
      }
      std::sort(by_seq.begin(), by_seq.end());
      starved_by_seq_of = guaranteed.membership();
    }
    starved.clear();
    for (const auto& [seq, r] : by_seq) {
      const Resource within = clampZero(r->guarantee - r->used);
      const Resource shape = r->fit.largestWithin(within);
      if (shape.isZero()) continue;
      starved.push_back(
          Starved{r, shape, std::min(fitCount(within, shape), ceilCount(r->demand, shape))});
    }
  }

  // Whether `room` fits one `shape` (fitCount(room, shape) > 0, without
  // its divisions).
  static bool fitsOne(const Resource& room, const Resource& shape) {
    if (shape.memoryMib() <= 0 && shape.vcores() <= 0) return false;
    return (shape.memoryMib() <= 0 || room.memoryMib() >= shape.memoryMib()) &&
           (shape.vcores() <= 0 || room.vcores() >= shape.vcores());
  }

  // Places the starved containers (collectStarved) in a node's room left
  // (`rem`), in order, as many of each as fit. Returns how many it placed.
  int64_t placeStarved(Resource& rem) const {
    int64_t placed = 0;
    for (Starved& st : starved) {
      if (st.uncovered == 0 || !fitsOne(rem, st.shape)) continue;
      const int64_t k = std::min(st.uncovered, fitCount(rem, st.shape));
      rem -= st.shape * k;
      st.uncovered -= k;
      placed += k;
    }
    return placed;
  }

  // A ShapeRooms for counting the rooms in containers of a shape that
  // `usable` accepts, the one `better` prefers among those counted, else
  // `shape` counted now (O(nodes)), replacing the least recently used.
  template <typename Usable, typename Better>
  ShapeRooms& shapeRooms(const Resource& shape, Usable usable, Better better) const {
    ShapeRooms* use = nullptr;
    for (ShapeRooms& sr : shape_rooms) {
      if (usable(sr.shape) && (use == nullptr || better(sr, *use))) use = &sr;
    }
    if (use == nullptr) {
      if (shape_rooms.size() < kShapeRooms) {
        shape_rooms.emplace_back();
        use = &shape_rooms.back();
      } else {
        use = &*std::min_element(
            shape_rooms.begin(), shape_rooms.end(),
            [](const ShapeRooms& a, const ShapeRooms& b) { return a.last_used < b.last_used; });
      }
      use->shape = shape;
      use->count.assign(slot_room.size(), 0);
      use->total = 0;
      for (size_t slot = 0; slot < slot_room.size(); slot++) {
        if (!room_slots.test(slot)) continue;
        use->count[slot] = fitCount(slot_room[slot], shape);
        use->total += use->count[slot];
      }
    }
    use->last_used = ++shape_rooms_clock;
    return *use;
  }

  // How many containers of `sr`'s shape the rooms cover visits hold, with
  // `without`'s room (if set) left out.
  int64_t heldWithout(const ShapeRooms& sr, const Container* without) const {
    int64_t held = sr.total;
    if (without != nullptr) {
      const auto w = static_cast<size_t>(without->node->slot);
      held -= sr.count[w];
      if (room_slots.test(w)) held += fitCount(slot_room[w] - without->resource, sr.shape);
    }
    return held;
  }

  // Whether every open starved shape has memory and vcores (the walk over
  // room_slots, and the counts below, need both).
  bool openNeedBoth() const {
    return std::all_of(starved.begin(), starved.end(), [](const Starved& st) {
      return st.uncovered == 0 || (st.shape.memoryMib() > 0 && st.shape.vcores() > 0);
    });
  }

  // Whether cover's walk would place all `uncovered` starved containers,
  // known without walking: when the rooms it visits hold that many
  // containers of a shape at least as large as every open one (L), the walk
  // places them all, since a node whose room holds f containers of L takes
  // at least min(f, the containers still open): with fewer placed, its room
  // left would still hold L, so every open reservation would have taken all
  // its containers there. Only when every open shape has memory and vcores.
  // False says nothing (the walk decides). O(kShapeRooms) with a counted
  // shape at least L, else O(nodes) to count L (replacing the least
  // recently used).
  bool coveredByCount(int64_t uncovered, const Container* without) const {
    if (!openNeedBoth()) return false;
    Resource large;
    for (const Starved& st : starved) {
      if (st.uncovered > 0) large = Resource::max(large, st.shape);
    }
    const ShapeRooms& use = shapeRooms(
        large, [&](const Resource& shape) { return large.fitsIn(shape); },
        [](const ShapeRooms& a, const ShapeRooms& b) { return a.total > b.total; });
    return heldWithout(use, without) >= uncovered;
  }

  // Whether cover's walk would leave some starved containers without room,
  // known without walking: when, for some counted shape S, the open
  // containers of shapes at least S in both dimensions outnumber the
  // containers of S the rooms it visits hold. A node takes k of those
  // containers only while its room holds k x S, so the walk places at most
  // the rooms' count of S of them. The shapes counted first: the least
  // memory and the least vcores of the open shapes (S below all of them),
  // and each of the first kShapesChecked distinct open shapes (S its own).
  // Only when every open shape has memory and vcores. False says nothing
  // (the walk decides). O(kShapeRooms x starved reservations) with those
  // shapes counted, else O(nodes) per shape to count.
  bool shortByCount(const Container* without) const {
    if (!openNeedBoth()) return false;
    Resource small;
    bool first = true;
    for (const Starved& st : starved) {
      if (st.uncovered == 0) continue;
      small = first ? st.shape : Resource::min(small, st.shape);
      first = false;
    }
    auto least = [](const ShapeRooms& a, const ShapeRooms& b) { return a.total < b.total; };
    shapeRooms(
        small, [&](const Resource& shape) { return shape.fitsIn(small); }, least);
    size_t checked = 0;
    for (size_t i = 0; i < starved.size() && checked < kShapesChecked; i++) {
      const Resource& shape = starved[i].shape;
      if (starved[i].uncovered == 0) continue;
      bool seen = false;
      for (size_t j = 0; j < i && !seen; j++)
        seen = starved[j].uncovered > 0 && starved[j].shape == shape;
      if (seen) continue;
      checked++;
      shapeRooms(
          shape, [&](const Resource& s) { return s == shape; }, least);
    }
    for (const ShapeRooms& sr : shape_rooms) {
      int64_t want = 0;
      for (const Starved& st : starved) {
        if (st.uncovered > 0 && sr.shape.fitsIn(st.shape)) want += st.uncovered;
      }
      if (want > heldWithout(sr, without)) return true;
    }
    return false;
  }

  // Collects the starved reservations and places their containers in every
  // node's room (free plus under notice), nodes in slot order; `without`, if
  // set, is a noticed container whose room is left out. Returns the starved
  // containers left without room. A node without memory or vcores in its
  // room fits no starved shape (each has both, else every node is walked),
  // so only the nodes of room_slots are visited; the others' room left
  // (slot_rem) is taken as free + noticed when selectVictims first touches
  // them (slot_rem_epoch). When every shape has both, a node is offered only
  // the first reservation of each shape with containers still uncovered
  // (placeHeads: the same placements as placeStarved's walk over all of
  // them; a walk over every starved reservation at every node led the
  // simulator's profile at 5,000 nodes, and one over the open ones at
  // 50,000), and none once its room is below their least memory or least
  // vcores; a node whose room is below that least shape is not visited at
  // all. The rooms are read from slot_room, not from the nodes.
  // A walk that covered everything is remembered (CoverMemo): the next call
  // with the same starved containers, no room changed up to the slot where
  // that walk ended and `without` beyond it gives the same 0 without a walk
  // (the simulator asks at every heartbeat, mostly after changes on other
  // nodes). With `only_whether` (stillNeeded), only whether the result is
  // above 0 is meant, and the room left (slot_rem, which only selectVictims
  // reads) is not: a count of the rooms too small for the starved containers
  // (shortByCount) answers `uncovered` without the walk, and the answer is
  // remembered for the same starved containers, rooms and left-out room
  // (RecheckMemo). O(nodes with room x shapes^2 + closed reservations x
  // shapes + starved reservations x log + nodes / 64) with `shapes` the
  // distinct open shapes, O(starved reservations) when remembered or
  // counted.
  // With `after_kill` (only_whether), the last call was a stillNeeded's
  // that found containers uncovered (so it set RecheckMemo) and only kills
  // happened since: they change neither the rooms nor what the starved
  // containers are collected from, so those are the memo's, taken without
  // collecting them, and the memo holds for the same left-out room.
  int64_t cover(const Container* without = nullptr, bool only_whether = false,
                bool after_kill = false) const {
    if (after_kill) {
      const RecheckMemo& m = recheck_memo;
      const size_t slot = static_cast<size_t>(without->node->slot);
      if (m.room_version == room_version && m.without_slot == slot &&
          m.without == without->resource)
        return m.uncovered;
      starved = m.starved;
    } else {
      collectStarved();
    }
    cover_epoch++;
    int64_t uncovered = 0;
    for (const Starved& st : starved) uncovered += st.uncovered;
    if (uncovered == 0) return 0;
    const size_t without_slot =
        without != nullptr ? static_cast<size_t>(without->node->slot) : kNoSlot;
    if (!only_whether) return coverFrom(uncovered, without, without_slot, false);
    const Resource without_res = without != nullptr ? without->resource : Resource();
    RecheckMemo& m = recheck_memo;
    if (m.holds(starved, room_version, without_slot, without_res)) return m.uncovered;
    m.starved = starved;  // before the walk spends them
    m.room_version = room_version;
    m.without_slot = without_slot;
    m.without = without_res;
    m.uncovered = coverFrom(uncovered, without, without_slot, true);
    m.valid = true;
    return m.uncovered;
  }

  // cover past the collection of the starved containers (`uncovered` of
  // them, `without` in slot `without_slot`): remembered (CoverMemo), counted
  // (coveredByCount, shortByCount) or walked.
  int64_t coverFrom(int64_t uncovered, const Container* without, size_t without_slot,
                    bool only_whether) const {
    if (cover_memo.holds(starved, room_changed_low, without_slot)) return 0;
    if (coveredByCount(uncovered, without)) return 0;
    if (only_whether && shortByCount(without)) return uncovered;
    cover_memo.starved = starved;  // before the walk spends them
    room_changed_low = kNoSlot;
    auto setRem = [&](size_t slot) -> Resource& {
      Resource& rem = slot_rem[slot];
      rem = slot_room[slot];
      if (slot == without_slot) rem -= without->resource;
      slot_rem_epoch[slot] = cover_epoch;
      return rem;
    };
    const bool all_need_both = std::all_of(starved.begin(), starved.end(), [](const Starved& st) {
      return st.shape.memoryMib() > 0 && st.shape.vcores() > 0;
    });
    if (!all_need_both) {
      cover_memo.valid = false;
      for (size_t slot = 0; slot < node_slots.size(); slot++) {
        if (node_slots[slot] == nullptr) continue;
        uncovered -= placeStarved(setRem(slot));
        if (uncovered <= 0) break;
      }
      return uncovered;
    }
    if (only_whether) return walkWhether(uncovered, without, without_slot);
    std::vector<OpenStarved>& open = openByShape();
    OpenGroups& og = open_groups;
    size_t last = 0;  // the slot where the walk ended
    room_slots.forEach([&](size_t slot) {
      const Resource& room = slot_room[slot];
      if (room.memoryMib() <= 0 || room.vcores() <= 0) {  // no room (or removed)
        room_slots.reset(slot);
        return true;
      }
      // A room below the least open shape takes nothing: not visited (its
      // slot_rem is read as free + noticed by take(), as setRem would set it).
      if (slot != without_slot && (room.memoryMib() < og.low_mem || room.vcores() < og.low_vc))
        return true;
      Resource& rem = setRem(slot);
      int64_t mem = rem.memoryMib(), vc = rem.vcores();
      const bool closed =
          mem >= og.low_mem && vc >= og.low_vc && placeHeads(mem, vc, open, uncovered);
      rem = Resource(mem, vc);
      if (uncovered <= 0) {
        last = slot;
        return false;
      }
      if (closed) og.reorder(open);
      return true;
    });
    for (const OpenStarved& o : open) o.st->uncovered = o.left;
    cover_memo.valid = uncovered <= 0 && without_slot > last;
    cover_memo.end = last;
    return uncovered;
  }

  // Places the open starved containers (`open`, grouped in open_groups) in
  // a node's room of `mem` MiB and `vc` vcores, as offering every open
  // reservation in order would (OpenGroups): the heads that fit, by place,
  // each taking as many as fit or all it has left. Takes what it places off
  // the room, the heads' counts and `uncovered`; a closed head is replaced
  // by the next of its group, the order of the groups is left as it was
  // (OpenGroups::reorder). Returns whether a head closed. O(groups x
  // (groups + closed)).
  bool placeHeads(int64_t& mem, int64_t& vc, std::vector<OpenStarved>& open,
                  int64_t& uncovered) const {
    OpenGroups& og = open_groups;
    std::vector<uint32_t>& fits = visit_groups;
    fits.clear();
    for (uint32_t g : og.order) {
      if (mem >= og.groups[g].mem && vc >= og.groups[g].vc) fits.push_back(g);
    }
    bool closed = false;
    for (;;) {
      // The head with the least place among the groups that still fit.
      OpenGroups::Group* best = nullptr;
      for (uint32_t g : fits) {
        OpenGroups::Group& gr = og.groups[g];
        if (gr.head == gr.end || mem < gr.mem || vc < gr.vc) continue;
        if (best == nullptr || og.members[gr.head] < og.members[best->head]) best = &gr;
      }
      if (best == nullptr) return closed;
      OpenStarved& o = open[og.members[best->head]];
      const int64_t k = std::min(o.left, std::min(floorDiv(mem, best->mem, best->inv_mem),
                                                  floorDiv(vc, best->vc, best->inv_vc)));
      mem -= best->mem * k;
      vc -= best->vc * k;
      o.left -= k;
      uncovered -= k;
      if (o.left == 0) {
        best->head++;  // the next member has containers uncovered
        closed = true;
      }
    }
  }

  // The open starved reservations (walk_open), from `starved`, grouped by
  // shape (open_groups); every starved shape has memory and vcores.
  std::vector<OpenStarved>& openByShape() const {
    std::vector<OpenStarved>& open = walk_open;
    open.clear();
    for (Starved& st : starved) {
      if (st.uncovered > 0) {
        const int64_t mem = st.shape.memoryMib(), vc = st.shape.vcores();
        open.push_back({mem, vc, st.uncovered, 1.0 / static_cast<double>(mem),
                        1.0 / static_cast<double>(vc), &st});
      }
    }
    open_groups.build(open);
    return open;
  }

  // coverFrom's walk when only whether it leaves containers uncovered is
  // meant (every starved shape has memory and vcores): the same placements
  // node by node, on memory and vcores held as plain counts (a starved
  // container is placed by those two only), without the room left of the
  // nodes (slot_rem, which only selectVictims reads after a cover that is
  // not only_whether), the open reservations offered by shape (OpenGroups).
  // Spends `starved` and remembers the walk (cover_memo) as coverFrom does.
  // A word of 64 slots is taken whole from its WordPlace when every group's
  // head has at least its `d` there left and some container stays open
  // after it: then no count runs out inside the word, so each node places
  // what it would with the counts unbounded, and the word places exactly
  // `d` (by induction over the nodes in slot order and the heads in order).
  // A word where a count runs out is taken by its blocks of 8 slots the
  // same way; the word of `without` and a block where a count runs out are
  // walked node by node. A re-check keeps its notice when the walk runs to
  // the end, and between two re-checks few words change: the others cost
  // O(groups) instead of a visit of each node.
  int64_t walkWhether(int64_t uncovered, const Container* without, size_t without_slot) const {
    using Open = OpenStarved;
    std::vector<Open>& open = openByShape();
    OpenGroups& og = open_groups;
    auto shapesId = [&] {
      open_shapes.clear();
      for (uint32_t g : og.order) open_shapes.emplace_back(og.groups[g].mem, og.groups[g].vc);
      open_shapes_id = shape_lists.idOf(open_shapes);
    };
    shapesId();
    // After reservations closed: the heads moved, so the order, the least
    // shape and the order's id.
    auto close = [&] {
      og.reorder(open);
      shapesId();
    };
    const int64_t without_mem = without != nullptr ? without->resource.memoryMib() : 0;
    const int64_t without_vc = without != nullptr ? without->resource.vcores() : 0;
    size_t last = 0;
    // One node: false once every starved container is placed.
    auto visit = [&](size_t slot) {
      const Resource& room = slot_room[slot];
      int64_t mem = room.memoryMib(), vc = room.vcores();
      if (mem <= 0 || vc <= 0) {  // no room (or removed)
        room_slots.reset(slot);
        return true;
      }
      if (slot == without_slot) {
        mem -= without_mem;
        vc -= without_vc;
      }
      if (mem < og.low_mem || vc < og.low_vc) return true;
      const bool closed = placeHeads(mem, vc, open, uncovered);
      if (uncovered <= 0) {
        last = slot;
        return false;
      }
      if (closed) close();
      return true;
    };
    // Whether the walk takes a word's (or a block's) placements `p` whole
    // (and takes them).
    auto takeWhole = [&](const WordPlace& p) {
      if (p.total >= uncovered) return false;
      for (size_t i = 0; i < og.order.size(); i++) {
        if (open[og.headPlace(og.order[i])].left < p.d[i]) return false;
      }
      bool closed = false;
      for (size_t i = 0; i < og.order.size(); i++) {
        Open& o = open[og.headPlace(og.order[i])];
        o.left -= p.d[i];
        closed = closed || o.left == 0;
      }
      uncovered -= p.total;
      if (closed) close();
      return true;
    };
    const size_t without_word = without_slot == kNoSlot ? kNoSlot : without_slot / 64;
    bool more = true;
    for (size_t w = 0; w < room_slots.numWords() && more; w++) {
      if (room_slots.word(w) == 0) continue;
      if (w != without_word) {
        if (takeWhole(unitPlace(w, 64))) continue;
        // A count runs out in this word: its blocks of 8 slots, walked node
        // by node only where one runs out.
        for (size_t b = 0; b < 8 && more; b++) {
          const uint64_t bits = (room_slots.word(w) >> (8 * b)) & 0xff;
          if (bits == 0 || takeWhole(unitPlace(w * 8 + b, 8))) continue;
          for (uint64_t left = bits; left != 0 && more; left &= left - 1)
            more = visit(w * 64 + 8 * b + static_cast<size_t>(__builtin_ctzll(left)));
        }
        continue;
      }
      for (uint64_t bits = room_slots.word(w); bits != 0 && more; bits &= bits - 1)
        more = visit(w * 64 + static_cast<size_t>(__builtin_ctzll(bits)));
    }
    for (const Open& o : open) o.st->uncovered = o.left;
    cover_memo.valid = uncovered <= 0 && without_slot > last;
    cover_memo.end = last;
    return uncovered;
  }

  // The WordPlace of unit `u` of `size` slots (64: word u; 8: block u % 8
  // of word u / 8) for the heads of open_groups in their order (the id of
  // their list of shapes in open_shapes_id), counted now (O(the unit's set
  // slots x groups)) unless remembered: a reservation after its group's
  // head places nothing with the counts unbounded (the head leaves room
  // below their shape). Counting resets the bits of slots without room, as
  // the walk does.
  const WordPlace& unitPlace(size_t u, size_t size) const {
    const size_t w = size == 64 ? u : u / 8;
    std::vector<WordPlace>& cache = size == 64 ? word_places : block_places;
    if (cache.size() < room_slots.numWords() * (64 / size) * kWordPlaces)
      cache.resize(room_slots.numWords() * (64 / size) * kWordPlaces);
    WordPlace* first = &cache[u * kWordPlaces];
    const uint64_t stamp = room_slots.stamp(w);
    WordPlace* use = first;
    for (WordPlace* p = first; p != first + kWordPlaces; p++) {
      if (p->stamp == stamp && p->shapes == open_shapes_id) {
        p->last_used = ++place_clock;
        return *p;
      }
      if (p->last_used < use->last_used) use = p;
    }
    const OpenGroups& og = open_groups;
    use->shapes = open_shapes_id;
    use->stamp = stamp;
    use->last_used = ++place_clock;
    use->total = 0;
    use->d.assign(og.order.size(), 0);
    const size_t base = u * size;
    const uint64_t bits =
        size == 64 ? room_slots.word(w) : (room_slots.word(w) >> (base % 64)) & 0xff;
    for (uint64_t left = bits; left != 0; left &= left - 1) {
      const size_t slot = base + static_cast<size_t>(__builtin_ctzll(left));
      const Resource& room = slot_room[slot];
      int64_t mem = room.memoryMib(), vc = room.vcores();
      if (mem <= 0 || vc <= 0) {
        room_slots.reset(slot);
        continue;
      }
      for (size_t i = 0; i < og.order.size(); i++) {
        const OpenGroups::Group& g = og.groups[og.order[i]];
        if (mem < g.mem || vc < g.vc) continue;
        const int64_t k = std::min(floorDiv(mem, g.mem, g.inv_mem), floorDiv(vc, g.vc, g.inv_vc));
        mem -= g.mem * k;
        vc -= g.vc * k;
        use->d[i] += k;
        use->total += k;
      }
    }
    return *use;
  }

  // Reservations below their guarantee whose containers find no room —
  // free or under notice, on a node where the container fits (cover) — take
  // capacity back from borrowers (docs/design/scheduler.md, work conserving). Free
  // fragments no starved container fits count for nothing (they starved a
  // reservation forever before). Approximations: a reservation's need is
  // counted in containers of its largest pending need, and placement
  // constraints are not checked. O(1) without a reservation below its
  // guarantee with demand, cover's cost (O(nodes with room x starved
  // reservations + nodes / 64)) plus the selection's with one.
  // With SchedulerOptions::preemption_interval, a heartbeat earlier than
  // that interval after the last check skips it (the count included): a
  // reservation that starves waits at most one interval longer for its
  // notices, and a notice's re-check at its deadline (stillNeeded) is not
  // gated.
  void preemptIfNeeded(TimePoint now) {
    if (need_total.isZero() || now < next_preemption_check) return;
    next_preemption_check = now + opts.preemption_interval;
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
    const auto slot = static_cast<size_t>(n.slot);
    Resource& rem = slot_rem[slot];
    if (slot_rem_epoch[slot] != cover_epoch) {  // not visited by this pass's cover: nothing placed
      rem = slot_room[slot];
      slot_rem_epoch[slot] = cover_epoch;
    }
    if (n.taken.empty()) nodes_taken.push_back(&n);
    n.taken.push_back(c);
    n.tentative += c->resource;
    Reservation* r = c->app->res;
    if (r != nullptr) {
      if (r->tentative.isZero()) touched.push_back(r);
      r->tentative += c->resource;
    }
    const Resource room = rem + n.tentative;
    if (std::none_of(starved.begin(), starved.end(),
                     [&](const Starved& st) { return st.uncovered > 0 && st.shape.fitsIn(room); }))
      return 0;
    for (Container* v : n.taken) {
      if (v->app->res != nullptr) v->app->res->tentative -= v->resource;
      mark(v, now);
    }
    n.taken.clear();
    n.tentative = Resource();
    rem = room;
    const int64_t placed = placeStarved(rem);
    n.hold += room - rem;
    return placed;
  }

  // A preemption notice for `c`: it leaves the candidates and is killed
  // after the grace period.
  void mark(Container* c, TimePoint now) {
    App* a = c->app;
    const Container* older = c->cand_link.prev;
    c->cand_hint =
        older != nullptr ? ContainerSlot{older->slot, older->generation} : ContainerSlot{};
    candsOf(c).erase(c);
    if (a->res != nullptr) a->res->preempting += c->resource;
    c->preempting = true;
    c->kill_deadline = now + opts.preemption_grace;
    c->node->marked++;
    c->node->notice_list.push_back(c);
    c->node->kill_due = std::min(c->node->kill_due, c->kill_deadline);
    marked_total++;
    c->node->noticed += c->resource;
    room_slots.set(static_cast<size_t>(c->node->slot));
    syncRoom(*c->node);
    a->notices.push_back(App::Notice{ContainerSlot{c->slot, c->generation}, c->kill_deadline});
    untaken_notices++;
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
    room_deferred = static_cast<size_t>(n.slot);
    n.free -= kept;
    if (n.resv_app != nullptr) expireReservation(n, now);
    if (opts.borrowing_reservations_share) {
      runShared(n, now, out);
    } else {
      runPhase(Phase::kAdhoc, root->children, n, now, out);
      // Borrowers beyond their guarantee take only what no ad-hoc app asked
      // for: a node reservation's room is kept from them.
      if (n.resv_app != nullptr) keepReserved(n);
      runPhase(Phase::kOverage, overage, n, now, out);
    }
    releaseKept(n);
    n.free += kept;
    room_deferred = kNoSlot;
    syncRoom(n);
  }

  NodeUpdateResult update(Node& n, TimePoint now) {
    NodeUpdateResult out;
    last_now = std::max(last_now, now);
    collectKills(n, now, out);
    rekeyConstrainedApps();
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

  // Scheduler::updateAsks for a known app.
  Status updateAsks(App* a, const std::vector<ResourceRequest>& asks);

  void maybeDropReservation(Reservation* r) {
    if (!r->removed || r->apps > 0) return;
    MORPHEUS_CHECK(r->pos[kGuaranteed] < 0 && r->pos[kOverage] < 0,
                   "reservation without apps in a heap");
    MORPHEUS_CHECK(r->need.isZero() && std::all_of(r->sources.begin(), r->sources.end(),
                                                   [](const auto& src) { return src->key == 0; }),
                   "reservation without apps in the preemption bookkeeping");
    reservation_by_id.erase(r->id);
    reservations.erase(r->id);
  }
};

Scheduler::Scheduler(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Scheduler::~Scheduler() = default;

Result<std::unique_ptr<Scheduler>> Scheduler::create(
    SchedulerOptions options, std::shared_ptr<const QueueOrderingPolicy> policy) {
  if (options.preemption_grace.count() < 0)
    return invalidArgument("preemption_grace", "must be >= 0");
  if (options.preemption_interval.count() < 0)
    return invalidArgument("preemption_interval", "must be >= 0");
  if (options.soft_constraint_delay.count() < 0)
    return invalidArgument("soft_constraint_delay", "must be >= 0");
  if (!(options.node_reservation.reservable_nodes > 0 &&
        options.node_reservation.reservable_nodes <= 1))
    return invalidArgument("node_reservation.reservable_nodes", "must be in (0, 1]");
  if (options.node_reservation.timeout.count() <= 0)
    return invalidArgument("node_reservation.timeout", "must be > 0");
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
  for (const auto& q : impl->opts.adhoc_queues) {
    impl->setLeafPolicy(impl->addQueue(q.path, q.weight), q.policy);
  }
  impl->updateCrvWaits();
  impl->containers.reserve(1024);
  return std::unique_ptr<Scheduler>(new Scheduler(std::move(impl)));
}

Status Scheduler::setAdhocQueues(const std::vector<AdhocQueueConfig>& queues) {
  impl_->flushStale();
  auto& s = *impl_;
  std::vector<AdhocQueueConfig> next = queues;
  if (next.empty()) next.push_back({"root.default", 1.0});
  std::set<std::string> configured, given;
  for (const auto& q : s.opts.adhoc_queues) configured.insert(q.path);
  for (size_t i = 0; i < next.size(); i++) {
    const auto& q = next[i];
    std::string field = "adhoc_queues[" + std::to_string(i) + "]";
    MORPHEUS_RETURN_IF_ERROR(validatePath(q.path, field + ".path"));
    if (!(q.weight > 0)) return invalidArgument(field + ".weight", "must be > 0");
    if (!given.insert(q.path).second)
      return invalidArgument(field + ".path", "duplicate '" + q.path + "'");
    if (!configured.count(q.path))
      return invalidArgument(field + ".path", "'" + q.path + "' is not a configured queue");
  }
  if (given != configured) {
    return invalidArgument("adhoc_queues", "must name every configured queue");
  }
  for (const auto& q : next) {
    Queue* queue = s.queues.at(q.path).get();
    queue->weight = q.weight;
    s.setLeafPolicy(queue, q.policy);
  }
  s.updateCrvWaits();
  s.crv_keyed = 0;
  s.rekeyAll();
  return Status::ok();
}

Status Scheduler::addNode(const NodeId& node, const Resource& total,
                          std::map<std::string, std::string> attributes) {
  impl_->flushStale();
  auto& s = *impl_;
  if (node.empty()) return invalidArgument("node", "empty node id");
  if (!validResource(total))
    return invalidArgument("total", "must be non-negative and non-zero, got " + total.toString());
  if (s.nodes.count(node) != 0) return alreadyExists("node " + node.value());
  Node& n = s.nodes[node];
  s.node_index.emplace(node, &n);
  n.slot = static_cast<int32_t>(s.node_slots.size());
  s.node_slots.push_back(&n);
  s.slot_room.push_back(total);
  s.room_version++;
  s.slot_rem.emplace_back();
  s.slot_rem_epoch.push_back(0);
  s.room_changed_low = std::min(s.room_changed_low, static_cast<size_t>(n.slot));
  n.id = node;
  n.total = total;
  n.free = total;
  s.room_slots.set(static_cast<size_t>(n.slot));
  for (ShapeRooms& sr : s.shape_rooms) sr.count.push_back(0);
  s.countRoom(static_cast<size_t>(n.slot));
  n.attrs = std::move(attributes);
  n.crv = s.crv.addNode(node, n.attrs, total.vcores());
  s.cluster_total += total;
  s.rekeyAll();
  return Status::ok();
}

Status Scheduler::setNodeTotal(const NodeId& node, const Resource& total) {
  impl_->flushStale();
  auto& s = *impl_;
  auto it = s.nodes.find(node);
  if (it == s.nodes.end()) return notFound("node " + node.value());
  if (total.anyNegative()) {
    return invalidArgument("total", "must be non-negative, got " + total.toString());
  }
  if (s.applyNodeTotal(it->second, total)) s.rekeyAll();
  return Status::ok();
}

Status Scheduler::setNodeTotals(const std::vector<std::pair<NodeSlot, Resource>>& totals) {
  impl_->flushStale();
  auto& s = *impl_;
  for (size_t i = 0; i < totals.size(); i++) {
    const auto& [slot, total] = totals[i];
    if (s.slotNode(slot) == nullptr) return notFound("node slot " + std::to_string(slot.value));
    if (total.anyNegative()) {
      return invalidArgument("totals[" + std::to_string(i) + "].total",
                             "must be non-negative, got " + total.toString());
    }
  }
  bool changed = false;
  for (const auto& [slot, total] : totals) {
    if (s.applyNodeTotal(*s.slotNode(slot), total)) changed = true;
  }
  // The keys are a function of the state (Key is a total order), so one
  // re-key after the last change leaves every heap's order as per-node
  // re-keys would.
  if (changed) s.rekeyAll();
  return Status::ok();
}

Status Scheduler::setNodeAttribute(const NodeId& node, const std::string& key,
                                   const std::string& value) {
  impl_->flushStale();
  auto& s = *impl_;
  if (key.empty()) return invalidArgument("key", "is required");
  auto it = s.nodes.find(node);
  if (it == s.nodes.end()) return notFound("node " + node.value());
  Node& n = it->second;
  auto old = n.attrs.find(key);
  if (value.empty() ? old == n.attrs.end() : old != n.attrs.end() && old->second == value)
    return Status::ok();
  if (value.empty()) {
    n.attrs.erase(old);
  } else {
    n.attrs[key] = value;
  }
  s.attrs_epoch++;  // every ConstraintFit is recomputed
  // The CRV's supply follows the node's attributes: re-register its slot.
  n.crv = s.crv.setAttributes(node, n.attrs);
  return Status::ok();
}

Result<std::vector<Allocation>> Scheduler::removeNode(const NodeId& node) {
  impl_->flushStale();
  auto& s = *impl_;
  auto it = s.nodes.find(node);
  if (it == s.nodes.end()) return notFound("node " + node.value());
  Node& n = it->second;
  std::vector<Allocation> lost;
  lost.reserve(n.containers.size);
  while (n.containers.head != nullptr) lost.push_back(s.freeContainer(n.containers.head));
  s.unreserve(n);
  s.cluster_total -= n.total;
  s.crv.removeNode(node);
  s.node_index.erase(node);
  s.node_slots[static_cast<size_t>(n.slot)] = nullptr;
  s.slot_room[static_cast<size_t>(n.slot)] = Resource();
  s.room_version++;
  s.room_changed_low = std::min(s.room_changed_low, static_cast<size_t>(n.slot));
  s.room_slots.touch(static_cast<size_t>(n.slot));
  s.countRoom(static_cast<size_t>(n.slot));
  s.room_slots.reset(static_cast<size_t>(n.slot));
  s.nodes.erase(it);
  s.rekeyAll();
  return lost;
}

Status Scheduler::addApp(const AppId& app, const UserId& user, const QueueRef& queue) {
  impl_->flushStale();
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
    leaf->apps++;
    parent = u;
  } else {
    res->apps++;
  }
  auto a = std::make_unique<App>(Kind::kApp, parent, s.entity_seq++);
  a->id = app;
  a->user_id = user;
  a->user = u;
  a->res = res;
  a->since = s.last_now;
  if (s.free_app_slots.empty()) {
    a->slot = static_cast<int32_t>(s.app_slots.size());
    s.app_slots.emplace_back();
  } else {
    a->slot = s.free_app_slots.back();
    s.free_app_slots.pop_back();
  }
  s.app_slots[static_cast<size_t>(a->slot)].app = a.get();
  s.apps.emplace(app, std::move(a));
  return Status::ok();
}

Result<std::vector<Allocation>> Scheduler::removeApp(const AppId& app) {
  impl_->flushStale();
  auto& s = *impl_;
  auto it = s.apps.find(app);
  if (it == s.apps.end()) return notFound("app " + app.value());
  App* a = it->second.get();
  std::vector<Allocation> out;
  out.reserve(a->containers.size);
  while (a->containers.head != nullptr) out.push_back(s.freeContainer(a->containers.head));
  for (const auto& ask : a->asks) {
    s.removeShape(a, ask.req);
    s.askDemand(a, ask.req, -ask.req.count);
  }
  a->asks.clear();
  while (!a->reserved.empty()) s.unreserve(*a->reserved.back());
  s.constrained_apps.erase(a->seq);
  s.refresh(a);
  MORPHEUS_CHECK(a->pos[kParent] < 0, "removed app still in a heap");
  std::unique_ptr<App> owned = std::move(it->second);
  s.apps.erase(it);
  s.untaken_notices -= static_cast<int64_t>(owned->notices.size());
  Impl::AppSlotEntry& slot = s.app_slots[static_cast<size_t>(owned->slot)];
  slot.app = nullptr;
  slot.generation++;
  s.free_app_slots.push_back(owned->slot);
  if (owned->user != nullptr) {
    User* u = owned->user;
    u->leaf->apps--;
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

namespace {

// DagStage contracts and acyclicity (Kahn's algorithm over the deps).
Status validateDag(const std::vector<DagStage>& stages) {
  const size_t n = stages.size();
  std::vector<int64_t> indegree(n, 0);
  std::vector<std::vector<size_t>> dependents(n);
  for (size_t i = 0; i < n; i++) {
    const DagStage& st = stages[i];
    const std::string f = "stages[" + std::to_string(i) + "]";
    if (st.tasks_left <= 0) return invalidArgument(f + ".tasks_left", "must be > 0");
    if (st.task_duration.count() <= 0) return invalidArgument(f + ".task_duration", "must be > 0");
    if (!validResource(st.task))
      return invalidArgument(f + ".task", "must be non-negative and non-zero");
    for (size_t d : st.deps) {
      if (d >= n || d == i)
        return invalidArgument(f + ".deps", "no stage " + std::to_string(d) + " to depend on");
      indegree[i]++;
      dependents[d].push_back(i);
    }
  }
  std::vector<size_t> ready;
  for (size_t i = 0; i < n; i++) {
    if (indegree[i] == 0) ready.push_back(i);
  }
  size_t seen = 0;
  while (!ready.empty()) {
    size_t i = ready.back();
    ready.pop_back();
    seen++;
    for (size_t d : dependents[i]) {
      if (--indegree[d] == 0) ready.push_back(d);
    }
  }
  if (seen != n) return invalidArgument("stages.deps", "the dependencies form a cycle");
  return Status::ok();
}

}  // namespace

Status Scheduler::reportDag(const AppId& app, const std::vector<DagStage>& stages) {
  impl_->flushStale();
  auto& s = *impl_;
  auto it = s.apps.find(app);
  if (it == s.apps.end()) return notFound("app " + app.value());
  MORPHEUS_RETURN_IF_ERROR(validateDag(stages));
  App* a = it->second.get();
  // Without a DagPlanner a report leaves the app without a hint, and its
  // fair share is not needed.
  const PolicyPoints& policy = s.policyOf(a);
  if (policy.dag != nullptr) {
    const Resource share = a->user != nullptr ? s.adhocFairShare(a) : Resource();
    a->hint = policy.dag->planApp(stages, share);
    // The plan sees the job's tasks, what the app holds (AppInput::used)
    // its AM container too: the need counts it, so a new job holding only
    // its AM is below its need. O(the app's containers).
    if (a->hint.valid) {
      for (const Container* c = a->containers.head; c != nullptr; c = c->app_link.next) {
        if (c->am) a->hint.need += c->resource;
      }
    }
  } else {
    a->hint = AppHint{};
  }
  a->reported_dag = true;
  s.refresh(a);
  return Status::ok();
}

Status Scheduler::updateAsks(const AppId& app, const std::vector<ResourceRequest>& asks) {
  impl_->flushStale();
  auto it = impl_->apps.find(app);
  if (it == impl_->apps.end()) return notFound("app " + app.value());
  return impl_->updateAsks(it->second.get(), asks);
}

Result<AppSlot> Scheduler::appSlot(const AppId& app) const {
  auto it = impl_->apps.find(app);
  if (it == impl_->apps.end()) return notFound("app " + app.value());
  return impl_->appSlotOf(it->second.get());
}

Status Scheduler::updateAsks(AppSlot app, const std::vector<ResourceRequest>& asks) {
  impl_->flushStale();
  App* a = impl_->slotApp(app);
  if (a == nullptr) return notFound("app slot " + std::to_string(app.index));
  return impl_->updateAsks(a, asks);
}

Status Scheduler::Impl::updateAsks(App* a, const std::vector<ResourceRequest>& asks) {
  auto& s = *this;
  // Validate everything before changing anything.
  for (size_t i = 0; i < asks.size(); i++) {
    const auto& r = asks[i];
    // Error paths only: the field's name is built when an ask is refused.
    const auto bad = [i](const char* field, const std::string& why) {
      return invalidArgument("asks[" + std::to_string(i) + "]" + field, why);
    };
    if (r.count < 0) return bad(".count", "must be >= 0");
    if (r.gang_size < 0) return bad(".gang_size", "must be >= 0");
    if (r.count > 0 && !validResource(r.capability)) {
      return bad(".capability",
                 "must be non-negative and non-zero, got " + r.capability.toString());
    }
    if (r.gang_size > 1 && r.count % r.gang_size != 0) {
      return bad(".count", "must be a multiple of gang_size " + std::to_string(r.gang_size));
    }
    if (r.expected_duration.count() < 0) return bad(".expected_duration", "must be >= 0");
    for (size_t j = 0; j < r.constraints.size(); j++) {
      MORPHEUS_RETURN_IF_ERROR(validateConstraint(
          r.constraints[j],
          "asks[" + std::to_string(i) + "].constraints[" + std::to_string(j) + "]"));
    }
    for (size_t j = 0; j < i; j++) {
      const auto& o = asks[j];
      bool same = r.request_id.empty() ? (o.request_id.empty() && o.priority == r.priority)
                                       : o.request_id == r.request_id;
      if (same) return bad(".request_id", "duplicates asks[" + std::to_string(j) + "]");
    }
  }
  for (const auto& r : asks) {
    auto old = std::find_if(a->asks.begin(), a->asks.end(), [&r](const Ask& x) {
      return r.request_id.empty() ? (x.req.request_id.empty() && x.req.priority == r.priority)
                                  : x.req.request_id == r.request_id;
    });
    if (old != a->asks.end()) {
      s.removeShape(a, old->req);
      s.askDemand(a, old->req, -old->req.count);
      a->asks.erase(old);
    }
    if (r.count == 0) continue;
    Ask ask;
    ask.req = r;
    ask.fit = s.fitOf(r.constraints);
    s.addShape(a, r);
    s.askDemand(a, r, r.count);
    a->asks.insert(std::upper_bound(a->asks.begin(), a->asks.end(), ask, askOrder), std::move(ask));
  }
  s.syncConstrained(a);
  const PolicyPoints& policy = s.policyOf(a);
  if (!a->reported_dag && a->user != nullptr && policy.no_dag != nullptr) {
    a->hint = policy.no_dag->planWithoutDag(s.adhocFairShare(a));
  }
  s.refresh(a);
  return Status::ok();
}

Result<Allocation> Scheduler::release(const AppId& app, const ContainerId& container) {
  impl_->flushStale();
  auto& s = *impl_;
  if (!s.opts.index_container_ids) return s.notIndexed();
  Container* c = s.idContainer(container);
  if (c == nullptr) return notFound("container " + container.value());
  if (c->app->id != app) {
    return permissionDenied("container " + container.value() + " does not belong to app " +
                            app.value());
  }
  return s.freeContainer(c);
}

Result<Allocation> Scheduler::containerCompleted(const ContainerId& container) {
  impl_->flushStale();
  auto& s = *impl_;
  if (!s.opts.index_container_ids) return s.notIndexed();
  Container* c = s.idContainer(container);
  if (c == nullptr) return notFound("container " + container.value());
  return s.freeContainer(c);
}

Status Scheduler::release(const AppId& app, ContainerSlot container) {
  impl_->flushStale();
  auto& s = *impl_;
  Container* c = s.slotContainer(container);
  if (c == nullptr) return notFound("container slot " + std::to_string(container.index));
  if (c->app->id != app) {
    return permissionDenied("container " + s.containerId(*c).value() + " does not belong to app " +
                            app.value());
  }
  s.dropContainer(c);
  return Status::ok();
}

Status Scheduler::containerCompleted(ContainerSlot container) {
  auto& s = *impl_;
  Container* c = s.slotContainer(container);
  if (c == nullptr) return notFound("container slot " + std::to_string(container.index));
  s.dropContainerDeferred(c);
  return Status::ok();
}

void Scheduler::prefetchContainer(ContainerSlot container) const {
  const auto& pool = impl_->container_pool;
  if (container.index < 0 || static_cast<size_t>(container.index) >= pool.size()) return;
  const char* p = reinterpret_cast<const char*>(&pool[static_cast<size_t>(container.index)]);
  // An end reads the first 112 bytes (Container's layout): up to three lines.
  __builtin_prefetch(p, 1);
  __builtin_prefetch(p + 56, 1);
  __builtin_prefetch(p + 111, 1);
}

void Scheduler::prefetchNeighbours(ContainerSlot container) const {
  const auto& pool = impl_->container_pool;
  if (container.index < 0 || static_cast<size_t>(container.index) >= pool.size()) return;
  const Container& c = pool[static_cast<size_t>(container.index)];
  if (!c.live || c.generation != container.generation) return;
  // The neighbours' link an end writes, on each of the three lists.
  for (Link Container::*m : {&Container::node_link, &Container::app_link, &Container::cand_link}) {
    const Link& l = c.*m;
    if (l.prev != nullptr) __builtin_prefetch(&(l.prev->*m), 1);
    if (l.next != nullptr) __builtin_prefetch(&(l.next->*m), 1);
  }
}

Status Scheduler::recoverContainer(const Allocation& c) {
  impl_->flushStale();
  auto& s = *impl_;
  if (!s.opts.index_container_ids) return s.notIndexed();
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
  Container* k = s.insertContainer(c.container, 0, app->second.get(), node->second, c.resource,
                                   c.priority, c.request_id, c.am);
  MORPHEUS_CHECK(k != nullptr, "container insert after existence check");
  s.refresh(app->second.get());
  return Status::ok();
}

Status Scheduler::setReservation(const ReservationId& id, ReservationKind kind,
                                 const Resource& guaranteed) {
  impl_->flushStale();
  auto& s = *impl_;
  if (id.empty()) return invalidArgument("reservation_id", "empty reservation id");
  if (guaranteed.anyNegative())
    return invalidArgument("guaranteed", "negative: " + guaranteed.toString());
  auto [at, added] = s.reservation_by_id.try_emplace(id, nullptr);
  if (added) {
    auto& slot = s.reservations[id];
    slot = std::make_unique<Reservation>(Kind::kReservation, nullptr, s.entity_seq++);
    slot->id = id;
    at->second = slot.get();
  }
  Reservation* r = at->second;
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
  impl_->flushStale();
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
  impl_->flushStale();
  Node* n = impl_->findNode(node);
  if (n == nullptr) return notFound("node " + node.value());
  return impl_->update(*n, now);
}

Result<NodeSlot> Scheduler::nodeSlot(const NodeId& node) const {
  const Node* n = impl_->findNode(node);
  if (n == nullptr) return notFound("node " + node.value());
  return NodeSlot{n->slot};
}

Result<NodeUpdateResult> Scheduler::nodeUpdate(NodeSlot slot, TimePoint now) {
  impl_->flushStale();
  Node* n = impl_->slotNode(slot);
  if (n == nullptr) return notFound("node slot " + std::to_string(slot.value));
  return impl_->update(*n, now);
}

Status Scheduler::nodeUpdate(NodeSlot slot, TimePoint now, SlotUpdate* out) {
  impl_->flushStale();
  out->grants.clear();
  out->to_kill.clear();
  Node* n = impl_->slotNode(slot);
  if (n == nullptr) return notFound("node slot " + std::to_string(slot.value));
  impl_->slot_out = out;
  impl_->update(*n, now);
  impl_->slot_out = nullptr;
  return Status::ok();
}

bool Scheduler::nodeHasNotices(NodeSlot slot) const {
  const Node* n = impl_->slotNode(slot);
  return n != nullptr && n->marked > 0;
}

bool Scheduler::anyNodeHasNotices() const { return impl_->marked_total > 0; }

int64_t Scheduler::numUntakenNotices() const { return impl_->untaken_notices; }

int64_t Scheduler::numReservedNodes() const { return impl_->reserved_nodes; }

NodeUpdateResult Scheduler::schedulePass(TimePoint now) {
  impl_->flushStale();
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
  impl_->flushStale();
  auto it = impl_->apps.find(app);
  if (it == impl_->apps.end()) return {};
  App& a = *it->second;
  impl_->untaken_notices -= static_cast<int64_t>(a.notices.size());
  std::vector<PreemptionNotice> out;
  out.reserve(a.notices.size());
  for (const App::Notice& n : a.notices) {
    // A notice leaves with its container (dropNotice): the slot is live.
    const Container* c = impl_->slotContainer(n.container);
    MORPHEUS_CHECK(c != nullptr, "a preemption notice outlived its container");
    out.push_back(PreemptionNotice{impl_->containerId(*c), a.id, c->node->id, n.deadline,
                                   "a reservation reclaims its guaranteed capacity"});
  }
  a.notices.clear();
  return out;
}

void Scheduler::takePreemptionNotices(std::vector<SlotNotice>* out) {
  impl_->flushStale();
  for (size_t i = 0; i < impl_->app_slots.size() && impl_->untaken_notices > 0; i++) {
    App* a = impl_->app_slots[i].app;
    if (a == nullptr || a->notices.empty()) continue;
    const AppSlot slot = impl_->appSlotOf(a);
    impl_->untaken_notices -= static_cast<int64_t>(a->notices.size());
    for (const App::Notice& n : a->notices) {
      const Container* c = impl_->slotContainer(n.container);
      MORPHEUS_CHECK(c != nullptr, "a preemption notice outlived its container");
      out->push_back(SlotNotice{n.container, slot, NodeSlot{c->node->slot}, n.deadline});
    }
    a->notices.clear();
  }
}

Resource Scheduler::clusterTotal() const { return impl_->cluster_total; }
Resource Scheduler::clusterUsed() const { return impl_->cluster_used; }
size_t Scheduler::numNodes() const { return impl_->nodes.size(); }
size_t Scheduler::numContainers() const {
  return impl_->container_pool.size() - impl_->free_container_slots.size();
}

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

Result<AppHint> Scheduler::appHint(const AppId& app) const {
  auto it = impl_->apps.find(app);
  if (it == impl_->apps.end()) return notFound("app " + app.value());
  return it->second->hint;
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

Result<std::vector<std::string>> Scheduler::pendingReasons(const AppId& app) const {
  auto it = impl_->apps.find(app);
  if (it == impl_->apps.end()) return notFound("app " + app.value());
  std::vector<std::string> out;
  for (const Ask& ask : it->second->asks) {
    if (!hasHard(ask.req)) continue;
    const ResourceRequest& r = ask.req;
    bool has = false, fits = false;
    Resource need = r.capability * std::max(1, r.gang_size);
    for (const auto& entry : impl_->nodes) {
      const auto& n = entry.second;  // not a structured binding: clang 14 cannot capture one
      if (!std::all_of(
              r.constraints.begin(), r.constraints.end(),
              [&n](const PlacementConstraint& c) { return !c.hard || matches(c, n.attrs); }))
        continue;
      has = true;
      if (need.fitsIn(n.total)) {
        fits = true;
        break;
      }
    }
    if (fits) continue;
    std::string what;
    for (const auto& c : r.constraints) {
      if (c.hard) what += (what.empty() ? "" : ", ") + describeConstraint(c);
    }
    std::string ask_name =
        r.request_id.empty() ? "priority " + std::to_string(r.priority) : "request " + r.request_id;
    out.push_back(
        ask_name + ": " +
        (has ? "no registered node with " + what + " is large enough for " + need.toString()
             : "no registered node has " + what) +
        "; waits until such a node registers");
  }
  const App* a = it->second.get();
  if (a->user == nullptr || a->asks.empty()) return out;
  for (const Entity* e = a->user->leaf; e != nullptr; e = e->parent) {
    const auto* q = static_cast<const Queue*>(e);
    if (!q->max || a->fit.anyFitsMemVcores(*q->max - q->used)) continue;
    out.push_back("queue " + q->path + " holds " + q->used.toString() + " of its max-resources " +
                  q->max->toString() + "; waits until its containers end");
  }
  return out;
}

Status Scheduler::setQueueMaxResources(const std::string& path, std::optional<Resource> max) {
  impl_->flushStale();
  auto it = impl_->queues.find(path);
  if (it == impl_->queues.end()) return notFound("ad-hoc queue " + path);
  if (max && max->anyNegative())
    return invalidArgument("max", "must not be negative, got " + max->toString());
  it->second->max = std::move(max);
  return Status::ok();
}

bool Scheduler::withinQueueMax(const AppId& app, const Resource& extra) const {
  auto it = impl_->apps.find(app);
  return it == impl_->apps.end() || Impl::withinCaps(it->second.get(), extra);
}

std::vector<ConstraintResourceVector::Entry> Scheduler::constraintResourceVector() const {
  return impl_->crv.entries();
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
    v.max_resources = q->max;
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

}  // namespace morpheus::sched
