#include "planner/sharing_policy.h"

#include <algorithm>
#include <cstdio>

namespace morpheus::planner {

namespace {

int64_t floorDivMs(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// Adds the load of (def, placement) to dense[s - s0] for steps s in [s0, s1).
void addLoad(const ReservationDefinition& def, const Placement& pl, int64_t step_ms, int64_t s0,
             int64_t s1, std::vector<Resource>& dense) {
  auto addShifted = [&](int64_t shift_ms) {
    for (const auto& a : pl.allocations) {
      int64_t b = floorDivMs(toEpochMs(a.start) + shift_ms, step_ms);
      int64_t e = floorDivMs(toEpochMs(a.end) + shift_ms, step_ms);
      for (int64_t s = std::max(b, s0); s < std::min(e, s1); ++s) {
        dense[static_cast<size_t>(s - s0)] += a.resource;
      }
    }
  };
  int64_t p = def.period.count();
  if (p == 0) {
    addShifted(0);
    return;
  }
  int64_t a = toEpochMs(def.arrival);
  int64_t k0 = floorDivMs(s0 * step_ms - a, p) - 1;
  for (int64_t k = k0; a + k * p < s1 * step_ms; ++k) addShifted(k * p);
}

// The range of steps a check must look at: the proposal's first instance (a
// whole LCM for periodic ones, covering every instance offset).
std::pair<int64_t, int64_t> checkRange(const PlanView& plan, const ReservationDefinition& def,
                                       const Placement& pl) {
  int64_t step = plan.options().step.count();
  if (pl.allocations.empty()) return {0, 0};
  int64_t s0 = floorDivMs(toEpochMs(pl.allocations.front().start), step);
  int64_t s1 = floorDivMs(toEpochMs(pl.allocations.back().end), step);
  if (def.period.count() > 0) s1 = std::max(s1, s0 + plan.options().lcm.count() / step);
  return {s0, s1};
}

class NoOverCommitPolicy final : public SharingPolicy {
 public:
  std::string name() const override { return "no-overcommit"; }
  Status check(const PlanView& plan, const ReservationId&, const ReservationDefinition& def,
               const Placement& proposal, TimePoint now) const override {
    int64_t step = plan.options().step.count();
    // Every allocation run at every instance inside the horizon (and at least one LCM).
    TimePoint until = now + std::max(plan.options().one_off_horizon, plan.options().lcm);
    int64_t p = def.period.count();
    for (const auto& a : proposal.allocations) {
      for (int64_t shift = 0;; shift += p) {
        TimePoint s = a.start + Millis(shift), e = a.end + Millis(shift);
        if (s >= until && shift > 0) break;
        if (e > now) {
          for (TimePoint t = std::max(s, fromEpochMs(floorDivMs(toEpochMs(now), step) * step));
               t < e; t += Millis(step)) {
            // Periodic definitions have strict priority over one-offs (Morpheus §6).
            Resource load = p == 0 ? plan.loadAt(t) : plan.periodicLoadAt(t);
            Resource total = load + a.resource;
            if (!total.fitsIn(plan.capacity())) {
              return infeasible("no-overcommit: load " + total.toString() + " at " +
                                std::to_string(toEpochMs(t)) + " ms exceeds the capacity " +
                                plan.capacity().toString());
            }
          }
        }
        if (p == 0) break;
      }
    }
    return Status::ok();
  }
};

class CapacityOverTimePolicy final : public SharingPolicy {
 public:
  explicit CapacityOverTimePolicy(SharingPolicyOptions o) : o_(o) {}
  std::string name() const override { return "capacity-over-time"; }
  Status check(const PlanView& plan, const ReservationId& id, const ReservationDefinition& def,
               const Placement& proposal, TimePoint) const override {
    int64_t step = plan.options().step.count();
    int64_t win = std::max<int64_t>(1, o_.average_window.count() / step);
    auto [c0, c1] = checkRange(plan, def, proposal);
    if (c0 >= c1) return Status::ok();
    int64_t s0 = c0 - win, s1 = c1 + win;
    std::vector<Resource> dense(static_cast<size_t>(s1 - s0));
    addLoad(def, proposal, step, s0, s1, dense);
    for (const PlannedReservation* r : plan.reservations()) {
      if (r->id == id || r->def.user != def.user) continue;
      addLoad(r->def, r->placement, step, s0, s1, dense);
    }
    std::vector<double> share(dense.size());
    for (size_t i = 0; i < dense.size(); ++i) {
      share[i] = dense[i].dominantShare(plan.capacity());
      if (share[i] > o_.instantaneous_max_share + 1e-9) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.3f", share[i]);
        return infeasible(
            "capacity-over-time: user " + def.user.value() + " would hold " + buf +
            " of the cluster at " + std::to_string((s0 + static_cast<int64_t>(i)) * step) +
            " ms, above the instantaneous limit " + std::to_string(o_.instantaneous_max_share));
      }
    }
    double sum = 0;
    for (size_t i = 0; i < share.size(); ++i) {
      sum += share[i];
      if (i >= static_cast<size_t>(win)) sum -= share[i - static_cast<size_t>(win)];
      if (i + 1 >= static_cast<size_t>(win) &&
          sum / static_cast<double>(win) > o_.average_share + 1e-9) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.3f", sum / static_cast<double>(win));
        return infeasible("capacity-over-time: user " + def.user.value() + " would hold " + buf +
                          " of the cluster on average over " +
                          std::to_string(o_.average_window.count()) +
                          " ms, above the average limit " + std::to_string(o_.average_share));
      }
    }
    return Status::ok();
  }

 private:
  SharingPolicyOptions o_;
};

}  // namespace

Result<std::unique_ptr<SharingPolicy>> makeSharingPolicy(const std::string& name,
                                                         const SharingPolicyOptions& options) {
  if (name == "no-overcommit") return std::unique_ptr<SharingPolicy>(new NoOverCommitPolicy());
  if (name == "capacity-over-time") {
    if (options.instantaneous_max_share <= 0 || options.instantaneous_max_share > 1) {
      return invalidArgument("sharing.instantaneous_max_share", "must be in (0, 1]");
    }
    if (options.average_share <= 0 || options.average_share > 1) {
      return invalidArgument("sharing.average_share", "must be in (0, 1]");
    }
    if (options.average_window.count() <= 0) {
      return invalidArgument("sharing.average_window", "must be > 0");
    }
    return std::unique_ptr<SharingPolicy>(new CapacityOverTimePolicy(options));
  }
  return invalidArgument("sharing_policy",
                         "'" + name + "' is not one of no-overcommit, capacity-over-time");
}

}  // namespace morpheus::planner
