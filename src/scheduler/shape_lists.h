// Ids of lists of shapes without comparing the lists at each use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace morpheus::sched {

// Ids of lists of open shapes (memory, vcores; in order) for the kill
// re-check walk's remembered placements (Scheduler::Impl's WordPlace): two
// lists with the same id are equal, so a word's placements are matched by
// comparing one number instead of the lists. Lists are kept in a table of
// kLists entries, in sets of kWays by their hash (a new list replaces the
// least recently used of its set); an id is never given twice, so a list
// seen again after it was replaced gets a new one, and placements
// remembered under the old id are no longer matched. O(list) per lookup.
class ShapeLists {
 public:
  using List = std::vector<std::pair<int64_t, int64_t>>;
  static constexpr size_t kLists = 256;
  // The id of `list` (from 1).
  uint64_t idOf(const List& list) {
    uint64_t h = 1469598103934665603ULL;  // FNV-1a
    for (const auto& [mem, vc] : list) {
      h = (h ^ static_cast<uint64_t>(mem)) * 1099511628211ULL;
      h = (h ^ static_cast<uint64_t>(vc)) * 1099511628211ULL;
    }
    if (entries_.empty()) entries_.resize(kLists);
    Entry* set = &entries_[setOf(h) * kWays];
    Entry* use = set;
    for (Entry* e = set; e != set + kWays; e++) {
      if (e->id != 0 && e->hash == h && e->list == list) {
        e->last_used = ++clock_;
        return e->id;
      }
      if (e->last_used < use->last_used) use = e;
    }
    use->hash = h;
    use->list = list;
    use->id = ++next_id_;
    use->last_used = ++clock_;
    return use->id;
  }

 private:
  static constexpr size_t kWays = 4;
  // The set of kWays entries of hash `h`, from all of its bits: FNV-1a's
  // low bits depend only on the low bits of what it hashed, and memory
  // sizes are multiples of 256 MiB, so lists that differ in memory only
  // would share an entry and replace each other at every lookup
  // (splitmix64's finalizer).
  static size_t setOf(uint64_t h) {
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
    return static_cast<size_t>((h ^ (h >> 31)) % (kLists / kWays));
  }
  struct Entry {
    uint64_t hash = 0;
    List list;
    uint64_t id = 0;  // 0: empty
    uint64_t last_used = 0;
  };
  std::vector<Entry> entries_;
  uint64_t next_id_ = 0;
  uint64_t clock_ = 0;
};

}  // namespace morpheus::sched
