// Resources as fixed-length integer rows for the agents' inner loops
// (Resource arithmetic, with its sorted list of extended resources, was a
// large share of a LowCost placement).
//
// A DenseDims is built once per planning problem from every dimension the
// problem can touch (memory, vcores, then every extended name in the
// capacity, the load or a stage's capability), so a row of k() integers holds
// any Resource of that problem without loss. share() and fitting() compute
// exactly what Resource::dominantShare and Resource::countFitting compute
// (the same integer operations and the same double division per dimension;
// a max is independent of its order), so decisions made on rows are the
// decisions made on Resources (Morpheus §6 c(t), checked by
// LowCostDecisionTest). Not thread-safe; one per propose() call.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/resource.h"
#include "planner/plan.h"

namespace morpheus::planner {

class DenseDims {
 public:
  explicit DenseDims(const PlanningProblem& p);

  // Number of dimensions (>= 2: memory and vcores first).
  size_t k() const { return k_; }
  // Writes r into row[0, k()). Every dimension of r must be one of this problem's.
  void put(const Resource& r, int64_t* row) const;
  // The capacity as a row.
  const int64_t* capacity() const { return cap_.data(); }

  // Resource::dominantShare of `row` against the capacity: max over the
  // dimensions of used/capacity (0 when used <= 0; +inf when capacity <= 0).
  double share(const int64_t* row) const {
    double s = 0;
    for (size_t i = 0; i < k_; ++i) s = std::max(s, dimShare(row[i], cap_[i]));
    return s;
  }
  // share() of row + m x unit, without materialising it.
  double shareWith(const int64_t* row, const int64_t* unit, int64_t m) const {
    double s = 0;
    for (size_t i = 0; i < k_; ++i) s = std::max(s, dimShare(row[i] + m * unit[i], cap_[i]));
    return s;
  }
  // Resource::countFitting of (capacity - used) for `unit`: the minimum over
  // the dimensions unit uses of floor(free / unit) (0 when nothing is free).
  int64_t fitting(const int64_t* used, const int64_t* unit) const {
    int64_t n = std::numeric_limits<int64_t>::max();
    for (size_t i = 0; i < k_; ++i) {
      if (unit[i] <= 0) continue;
      int64_t have = cap_[i] - used[i];
      n = std::min(n, have <= 0 ? 0 : have / unit[i]);
    }
    return n;
  }
  // dst += m x src over one row.
  void addScaled(int64_t* dst, const int64_t* src, int64_t m) const {
    for (size_t i = 0; i < k_; ++i) dst[i] += m * src[i];
  }
  static bool isZero(const int64_t* row, size_t k) {
    return std::all_of(row, row + k, [](int64_t v) { return v == 0; });
  }

 private:
  static double dimShare(int64_t used, int64_t cap) {
    if (used <= 0) return 0.0;
    if (cap <= 0) return std::numeric_limits<double>::infinity();
    return static_cast<double>(used) / static_cast<double>(cap);
  }

  size_t k_ = 2;
  std::vector<std::string> names_;  // extended dimensions, sorted; row index 2 + i
  std::vector<int64_t> cap_;
};

}  // namespace morpheus::planner
