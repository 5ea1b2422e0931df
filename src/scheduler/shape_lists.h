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
// comparing one number instead of the lists. Lists are kept in a table of kLists entries by their
// hash (a list replaces the one in its entry); an id is never given twice, so a list seen again
// after it was replaced gets a new one, and placements remembered under the old id are no longer
// matched. O(list) per lookup.
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
    Entry& e = entries_[h % kLists];
    if (e.id != 0 && e.hash == h && e.list == list) return e.id;
    e.hash = h;
    e.list = list;
    e.id = ++next_id_;
    return e.id;
  }

 private:
  struct Entry {
    uint64_t hash = 0;
    List list;
    uint64_t id = 0;  // 0: empty
  };
  std::vector<Entry> entries_;
  uint64_t next_id_ = 0;
};

}  // namespace morpheus::sched
