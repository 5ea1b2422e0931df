// The hold's prediction for harvesting (Zhang et al., OSDI'16 §4: the
// scheduler "avoids creating stragglers due to a lack of resources"): will
// a node's primary tenant leave a secondary container a core for the
// container's whole expected run? One definition for morpheus-harvest-sim
// (HistoryFallback::kHold) and the RM (rm.harvest.hold).
//
// With c the node's current primary share, W the expected run and k the
// steps of the tenant's history series the run spans after the current one:
//  - periodic class: max(c, the largest share the history shows over the
//    same times of day, [now, now + W) modulo the day);
//  - constant or unpredictable class (or none): c + the rise of the
//    history over k steps at the rise quantile (over every start step i of
//    the history, the largest share over steps i..i+k less the share at i;
//    quantile 1 is the largest rise seen; the rise over k steps is at least
//    that over fewer; the sum capped at 1).
// A node fits when predictedMargin >= 1: for every b in (0, W],
// capacity x (1 - the share predicted over [now, now + b)) - taken - the
// containers still expected there at now + b >= 1.
//
// Times of day are those of the TimePoints (epoch-based: UTC for the RM's
// clock; the simulator's history starts at time 0, a midnight).
// Not thread-safe: a TenantForecast extends its rise table on demand (the
// caller's lock or thread owns it).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/clock.h"
#include "harvest/harvest_classes.h"

namespace morpheus::rm {

// The largest value of a series over any range, in O(1) per query after
// O(n log n) preparation (a sparse table: level l holds the largest of
// every 2^l consecutive values).
class RangeMax {
 public:
  RangeMax() = default;
  explicit RangeMax(std::vector<double> series);
  // The largest of values [from, from + len); len >= 1 and inside the series.
  double max(size_t from, size_t len) const {
    size_t l = 0;
    while ((size_t{2} << l) <= len) l++;
    return std::max(levels_[l][from], levels_[l][from + len - (size_t{1} << l)]);
  }

 private:
  std::vector<std::vector<double>> levels_;
};

// Walks [0, work) in the segments over which the number of containers still
// on a node is constant: `ends` are their ends relative to now, sorted;
// f(from, to, n) is called for each segment [from, to) with n the containers
// whose end is after `from`.
template <typename T, typename F>
void forEachSegment(const std::vector<T>& ends, T work, F&& f) {
  auto n = static_cast<int64_t>(ends.size());
  size_t next = 0;
  T from{};
  while (from < work) {
    while (next < ends.size() && ends[next] <= from) {
      next++;
      n--;
    }
    const T to = next < ends.size() ? std::min(work, ends[next]) : work;
    f(from, to, n);
    from = to;
  }
}

// One primary tenant's CPU history as the prediction reads it.
class TenantForecast {
 public:
  // `history`: the tenant's share (fraction) per step of `step` (> 0),
  // oldest first, the first step starting at `start`; `rise_quantile` in
  // [0, 1] (asserted). An empty history predicts the current share.
  TenantForecast(std::vector<double> history, TimePoint start, Millis step, double rise_quantile);

  // The share predicted over [now, now + run) (run <= 0 counts as 1 ms) on
  // a node of this tenant whose class has `pattern` (a node without class:
  // kUnpredictable), whose primary uses `current` now. Extends the rise
  // table up to the run's span on first use: O(history x span) once.
  double share(UtilPattern pattern, double current, TimePoint now, Millis run) {
    if (history_.empty()) return current;
    const Millis r = std::max(run, Millis(1));
    const int64_t k =
        (now + r - Millis(1)).time_since_epoch() / step_ - now.time_since_epoch() / step_;
    if (pattern == UtilPattern::kPeriodic) {
      const auto len = std::min(static_cast<size_t>(k) + 1, slots_);
      const auto from = static_cast<size_t>((now.time_since_epoch() % kDay) / step_);
      return std::max(current, profile_.max(from, len));
    }
    const size_t want = std::min(static_cast<size_t>(k), history_.size() - 1);
    if (want >= rise_.size()) extendRise(want);
    return std::min(1.0, current + rise_[want]);
  }

  size_t steps() const { return history_.size(); }
  Millis step() const { return step_; }

 private:
  static constexpr Millis kDay{86400000};
  // Builds rise_ up to rise_[want] (want < history size).
  void extendRise(size_t want);
  const std::vector<double> history_;
  const Millis step_;
  const double quantile_;
  size_t slots_ = 1;          // steps in a day (the last one partial when step does not divide it)
  RangeMax profile_;          // per time-of-day slot, the largest share; two days
  std::vector<double> rise_;  // rise_[k]: the rise over k steps (built so far)
  std::vector<double> top_;   // the largest share over steps i..i+k, k = rise_.size() - 1
};

// The fewest containers of the job's size a node is predicted to leave
// over a run of `run` from `now` beside its primary: capacity x (1 - share
// over [now, now + b)) - taken - the containers expected there at now + b,
// least over every b at which that count changes (b = run included).
// `capacity`: the containers the node holds when idle; `taken`: those kept
// for the whole run (the NM's reserve, containers whose end is unknown);
// `ends`: the others' expected ends relative to now, each > 0, sorted (one
// at or past `run` counts for the whole run). The node fits the run when the
// margin is >= 1.
double predictedMargin(TenantForecast& forecast, UtilPattern pattern, double current,
                       double capacity, double taken, const std::vector<Millis>& ends,
                       TimePoint now, Millis run);

}  // namespace morpheus::rm
