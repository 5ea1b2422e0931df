// Resource-over-time as a run-length-encoded step function (the role of
// YARN's RLESparseResourceAllocation). Keys are integer time units chosen by
// the owner (plan steps for the plan, milliseconds for API output).
//
// Contract: value(t) is the Resource in force from the greatest key <= t up to
// the next key; before the first key the value is zero. Adjacent runs never
// hold equal values and the last run is always zero, so two step functions
// are equal iff their maps are equal. Not thread-safe; owned by one Plan.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "common/resource.h"

namespace morpheus::planner {

// One run [start, end) holding `value`.
struct RleSegment {
  int64_t start = 0;
  int64_t end = 0;
  Resource value;
};

class RleResource {
 public:
  // Adds `r` over [start, end); a no-op when start >= end. O(log n + runs in range).
  void add(int64_t start, int64_t end, const Resource& r);
  void subtract(int64_t start, int64_t end, const Resource& r) { add(start, end, r * -1); }

  // Value at t. O(log n).
  Resource at(int64_t t) const;
  // Per-dimension maximum over [start, end) (zero when the range is empty).
  Resource maxOver(int64_t start, int64_t end) const;
  // Runs intersecting [from, to), clipped to it, including zero-valued runs,
  // so they tile [from, to) exactly.
  std::vector<RleSegment> segments(int64_t from, int64_t to) const;
  // Writes value(from + i) into out[offset + i] for i in [0, to - from).
  // `out` must be large enough. O(log n + runs + (to - from)).
  void fill(int64_t from, int64_t to, std::vector<Resource>& out, size_t offset) const;
  // Drops everything before t (value before t becomes zero, value from t on unchanged).
  void eraseBefore(int64_t t);

  bool empty() const { return runs_.empty(); }
  size_t runCount() const { return runs_.size(); }
  bool operator==(const RleResource& o) const { return runs_ == o.runs_; }

 private:
  // Ensures a key exists at t (splitting the run containing it).
  std::map<int64_t, Resource>::iterator split(int64_t t);
  // Merges the run starting at `it` with its predecessor when they are equal.
  void coalesce(int64_t t);

  std::map<int64_t, Resource> runs_;
};

}  // namespace morpheus::planner
