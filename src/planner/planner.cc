#include "planner/planner.h"

#include <algorithm>
#include <ctime>
#include <set>

namespace morpheus::planner {

namespace {
// A time in an explanation as people read it: ISO-8601 UTC
// ("2026-12-01T10:00:00Z"; milliseconds only when not zero).
std::string iso(TimePoint t) {
  const int64_t ms = toEpochMs(t);
  const int64_t secs = ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
  const std::time_t tt = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[48];
  size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  if (ms - secs * 1000 != 0) {
    std::snprintf(buf + n, sizeof buf - n, ".%03lld", static_cast<long long>(ms - secs * 1000));
  }
  return std::string(buf) + "Z";
}
}  // namespace

std::string InfeasibilityExplanation::toString() const {
  std::string s = stage >= 0 ? "stage " + std::to_string(stage) + " could not be placed: " : "";
  s += reason;
  if (!saturated.empty()) {
    s += "; saturated steps:";
    size_t shown = 0;
    for (const auto& [a, b] : saturated) {
      if (shown++ == 8) {
        s += " ... (" + std::to_string(saturated.size()) + " ranges)";
        break;
      }
      s += " [" + iso(a) + ", " + iso(b) + ")";
    }
  }
  s += earliest_feasible_deadline ? "; earliest feasible deadline with the same arrival: " +
                                        iso(*earliest_feasible_deadline)
                                  : "; no feasible deadline within the period/horizon";
  if (stage >= 0) {
    s += "; " + std::to_string(containers_fitting_by_deadline) + " containers of stage " +
         std::to_string(stage) + " would fit by the requested deadline";
  }
  return s;
}

Result<std::unique_ptr<Planner>> Planner::create(const PlannerOptions& o,
                                                 const Resource& capacity) {
  if (o.step.count() <= 0) return invalidArgument("step", "must be > 0");
  if (o.lcm.count() <= 0 || o.lcm.count() % o.step.count() != 0) {
    return invalidArgument("lcm", "must be a positive multiple of step");
  }
  if (o.one_off_horizon < o.step) return invalidArgument("one_off_horizon", "must be >= step");
  if (capacity.anyNegative()) return invalidArgument("capacity", "must not be negative");
  if (o.agent_options.end_points < 1) {
    return invalidArgument("agent_options.end_points", "must be >= 1");
  }
  if (o.agent_options.alignment_penalty < 0) {
    return invalidArgument("agent_options.alignment_penalty", "must be >= 0");
  }
  if (!(o.agent_options.tie_break_slack >= 0 && o.agent_options.tie_break_slack < 1)) {
    return invalidArgument("agent_options.tie_break_slack", "must be in [0, 1)");
  }
  MORPHEUS_ASSIGN_OR_RETURN(auto agent, makeAgent(o.agent, o.agent_options));
  MORPHEUS_ASSIGN_OR_RETURN(auto sharing, makeSharingPolicy(o.sharing_policy, o.sharing));
  return std::unique_ptr<Planner>(new Planner(o, capacity, std::move(agent), std::move(sharing)));
}

Planner::Planner(const PlannerOptions& options, const Resource& capacity,
                 std::unique_ptr<ReservationAgent> agent, std::unique_ptr<SharingPolicy> sharing)
    : options_(options),
      agent_(std::move(agent)),
      sharing_(std::move(sharing)),
      plan_(PlanOptions{options.step, options.lcm, options.one_off_horizon}, capacity) {}

bool Planner::fits(const ReservationDefinition& def, TimePoint now) const {
  PlanningProblem p = plan_.problemFor(def, now);
  return agent_->propose(p, nullptr).isOk();
}

InfeasibilityExplanation Planner::explain(const ReservationDefinition& def,
                                          const AgentFailure& failure, TimePoint now) const {
  InfeasibilityExplanation ex;
  ex.stage = failure.stage;
  ex.reason = failure.reason;
  PlanningProblem p = plan_.problemFor(def, now);
  if (ex.stage >= 0 && ex.stage < static_cast<int>(def.stages.size())) {
    const Resource& c = def.stages[static_cast<size_t>(ex.stage)].capability;
    for (int64_t j = 0; j < p.window; ++j) {
      bool sat = (p.capacity - p.load[static_cast<size_t>(j)]).countFitting(c) == 0;
      if (!sat) continue;
      TimePoint a = plan_.stepTime(p.first_step + j), b = plan_.stepTime(p.first_step + j + 1);
      if (!ex.saturated.empty() && ex.saturated.back().second == a) {
        ex.saturated.back().second = b;
      } else {
        ex.saturated.emplace_back(a, b);
      }
    }
  }
  // Earliest deadline (same arrival) at which it fits: binary search over steps.
  TimePoint dmax =
      def.period.count() > 0 ? def.arrival + def.period : now + options_.one_off_horizon;
  int64_t lo = plan_.stepFloor(def.deadline) + 1, hi = plan_.stepFloor(dmax);
  ReservationDefinition d2 = def;
  auto fitsBy = [&](int64_t s) {
    d2.deadline = plan_.stepTime(s);
    return fits(d2, now);
  };
  if (lo <= hi && fitsBy(hi)) {
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      if (fitsBy(mid)) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    ex.earliest_feasible_deadline = plan_.stepTime(hi);
  }
  // Containers of the failed stage that fit by the requested deadline.
  if (ex.stage >= 0 && ex.stage < static_cast<int>(def.stages.size())) {
    ReservationDefinition d3 = def;
    auto& st = d3.stages[static_cast<size_t>(ex.stage)];
    int64_t g = def.stages[static_cast<size_t>(ex.stage)].min_concurrency;
    auto fitsWith = [&](int64_t n) {
      st.num_containers = n;
      st.min_concurrency = std::min(g, n);
      return fits(d3, now);
    };
    int64_t a = 0, b = def.stages[static_cast<size_t>(ex.stage)].num_containers - 1;
    while (a < b) {
      int64_t mid = a + (b - a + 1) / 2;
      if (fitsWith(mid)) {
        a = mid;
      } else {
        b = mid - 1;
      }
    }
    ex.containers_fitting_by_deadline = a;
  }
  return ex;
}

Result<Placement> Planner::propose(const ReservationId& id, const ReservationDefinition& def,
                                   TimePoint now, InfeasibilityExplanation* explanation) const {
  if (id.empty()) return invalidArgument("id", "must not be empty");
  MORPHEUS_RETURN_IF_ERROR(
      validateDefinition(def, plan_.capacity(), options_.lcm, options_.one_off_horizon, now));
  if (def.period.count() % options_.step.count() != 0) {
    return invalidArgument("period", "must be a multiple of the plan step (" +
                                         std::to_string(options_.step.count()) + " ms)");
  }
  PlanningProblem p = plan_.problemFor(def, now);
  AgentFailure failure;
  Result<Placement> r = agent_->propose(p, &failure);
  if (!r.isOk()) {
    InfeasibilityExplanation ex = explain(def, failure, now);
    if (explanation != nullptr) *explanation = ex;
    return infeasible(ex.toString());
  }
  MORPHEUS_RETURN_IF_ERROR(sharing_->check(plan_, id, def, r.value(), now));
  return r;
}

Result<Placement> Planner::submit(const ReservationId& id, const ReservationDefinition& def,
                                  TimePoint now, InfeasibilityExplanation* explanation,
                                  DisplacementReport* displaced) {
  if (plan_.find(id) != nullptr) return alreadyExists("reservation " + id.value());
  MORPHEUS_ASSIGN_OR_RETURN(Placement p, propose(id, def, now, explanation));
  MORPHEUS_RETURN_IF_ERROR(plan_.add(id, def, p, next_seq_++));
  DisplacementReport rep = displaceOneOffs(id, now);
  if (displaced != nullptr) *displaced = std::move(rep);
  return p;
}

Result<Placement> Planner::update(const ReservationId& id, const ReservationDefinition& def,
                                  TimePoint now, InfeasibilityExplanation* explanation,
                                  DisplacementReport* displaced) {
  const PlannedReservation* old = plan_.find(id);
  if (old == nullptr) return notFound("reservation " + id.value());
  PlannedReservation saved = *old;
  MORPHEUS_RETURN_IF_ERROR(plan_.remove(id));
  Result<Placement> r = propose(id, def, now, explanation);
  if (!r.isOk()) {
    // Swap failed: put the old placement and its extras back exactly.
    MORPHEUS_CHECK(plan_.add(id, saved.def, saved.placement, saved.accepted_seq).isOk(),
                   "restoring the old placement of " + id.value());
    for (const auto& e : saved.extras) {
      MORPHEUS_CHECK(
          plan_.addExtra(id, e.resource, plan_.stepTime(e.start_step), plan_.stepTime(e.end_step))
              .isOk(),
          "restoring extras of " + id.value());
    }
    return r.status();
  }
  // The new placement was planned without the old extras; they are released.
  MORPHEUS_RETURN_IF_ERROR(plan_.add(id, def, r.value(), saved.accepted_seq));
  DisplacementReport rep = displaceOneOffs(id, now);
  if (displaced != nullptr) *displaced = std::move(rep);
  return r;
}

std::vector<bool> Planner::periodicOffsets(const PlannedReservation& r) const {
  const int64_t L = plan_.lcmSteps();
  const int64_t ps = r.def.period.count() / options_.step.count();
  std::vector<bool> mask(static_cast<size_t>(L), false);
  auto mod = [L](int64_t s) { return ((s % L) + L) % L; };
  for (const auto& a : r.placement.allocations) {
    for (int64_t s = plan_.stepFloor(a.start); s < plan_.stepFloor(a.end); ++s) {
      for (int64_t k = 0; k < L / ps; ++k) mask[static_cast<size_t>(mod(s + k * ps))] = true;
    }
  }
  return mask;
}

DisplacementReport Planner::displaceOneOffs(const ReservationId& id, TimePoint now) {
  const PlannedReservation* r = plan_.find(id);
  if (r == nullptr || r->def.period.count() == 0) return {};
  // Only one-offs and DRA extras can be displaced: on a plan with neither
  // (periodic reservations only, Morpheus' common case) repairOneOffs would
  // scan the whole one-off horizon and find nothing (a visible share of a
  // LowCost admission).
  if (!plan_.hasDisplaceable()) return {};
  return repairOneOffs(now, periodicOffsets(*r));
}

void Planner::revertDisplacement(const DisplacementReport& report) {
  for (const PlannedReservation& r : report.before) {
    if (plan_.find(r.id) != nullptr) {
      MORPHEUS_CHECK(plan_.remove(r.id).isOk(), "reverting " + r.id.value());
    }
    MORPHEUS_CHECK(plan_.add(r.id, r.def, r.placement, r.accepted_seq).isOk(),
                   "reverting the placement of " + r.id.value());
    for (const auto& e : r.extras) {
      MORPHEUS_CHECK(
          plan_.addExtra(r.id, e.resource, plan_.stepTime(e.start_step), plan_.stepTime(e.end_step))
              .isOk(),
          "reverting extras of " + r.id.value());
    }
  }
}

Status Planner::remove(const ReservationId& id) { return plan_.remove(id); }

Status Planner::restore(const ReservationId& id, const ReservationDefinition& def,
                        const Placement& placement) {
  if (id.empty()) return invalidArgument("id", "must not be empty");
  MORPHEUS_RETURN_IF_ERROR(checkPlacement(def, placement, options_.step));
  MORPHEUS_RETURN_IF_ERROR(plan_.add(id, def, placement, next_seq_++));
  return Status::ok();
}

CapacityChangeReport Planner::setCapacity(const Resource& capacity, TimePoint now) {
  CapacityChangeReport rep;
  plan_.setCapacity(capacity);
  const int64_t L = plan_.lcmSteps();
  const int64_t step = options_.step.count();
  std::vector<Resource> per = plan_.periodicDense();
  // Periodic offsets over capacity (periodic reservations keep their placement).
  std::vector<bool> over_off(static_cast<size_t>(L), false);
  for (int64_t o = 0; o < L; ++o) {
    if (per[static_cast<size_t>(o)].fitsIn(capacity)) continue;
    over_off[static_cast<size_t>(o)] = true;
    if (!rep.over_capacity_offsets.empty() &&
        rep.over_capacity_offsets.back().second == Millis(o * step)) {
      rep.over_capacity_offsets.back().second = Millis((o + 1) * step);
    } else {
      rep.over_capacity_offsets.emplace_back(Millis(o * step), Millis((o + 1) * step));
    }
  }
  auto mod = [L](int64_t s) { return ((s % L) + L) % L; };
  if (!rep.over_capacity_offsets.empty()) {
    for (const PlannedReservation* r : plan_.reservations()) {
      if (r->def.period.count() == 0) continue;
      int64_t ps = r->def.period.count() / step;
      bool hit = false;
      for (const auto& a : r->placement.allocations) {
        for (int64_t s = plan_.stepFloor(a.start); s < plan_.stepFloor(a.end) && !hit; ++s) {
          for (int64_t k = 0; k < L / ps && !hit; ++k)
            hit = over_off[static_cast<size_t>(mod(s + k * ps))];
        }
      }
      if (hit) rep.periodic_over_capacity.push_back(r->id);
    }
  }
  DisplacementReport fix = repairOneOffs(now, {});
  rep.replanned = std::move(fix.replanned);
  rep.at_risk = std::move(fix.at_risk);
  rep.extras_released = std::move(fix.extras_released);
  return rep;
}

DisplacementReport Planner::repairOneOffs(TimePoint now, const std::vector<bool>& offsets) {
  DisplacementReport rep;
  const Resource& capacity = plan_.capacity();
  const int64_t L = plan_.lcmSteps();
  auto mod = [L](int64_t s) { return ((s % L) + L) % L; };
  std::vector<Resource> per = plan_.periodicDense();
  std::set<ReservationId> saved;
  auto save = [&](const PlannedReservation& r) {
    if (saved.insert(r.id).second) rep.before.push_back(r);
  };
  // Steps of the horizon where periodic + one-off load exceeds capacity.
  const int64_t s0 = plan_.stepFloor(now), s1 = plan_.stepCeil(now + options_.one_off_horizon);
  std::vector<bool> over;
  auto recompute = [&]() {
    std::vector<Resource> one;
    plan_.oneOffDense(s0, s1, one);
    over.assign(static_cast<size_t>(s1 - s0), false);
    bool any = false;
    for (int64_t s = s0; s < s1; ++s) {
      if (!offsets.empty() && !offsets[static_cast<size_t>(mod(s))]) continue;
      bool o =
          !(per[static_cast<size_t>(mod(s))] + one[static_cast<size_t>(s - s0)]).fitsIn(capacity);
      over[static_cast<size_t>(s - s0)] = o;
      any = any || o;
    }
    return any;
  };
  auto touches = [&](int64_t a, int64_t b) {
    for (int64_t s = std::max(a, s0); s < std::min(b, s1); ++s) {
      if (over[static_cast<size_t>(s - s0)]) return true;
    }
    return false;
  };
  if (!recompute()) return rep;
  for (const PlannedReservation* r : plan_.reservations()) {
    bool hit = false;
    for (const auto& e : r->extras) hit = hit || touches(e.start_step, e.end_step);
    if (!hit) continue;
    rep.extras_released.push_back(r->id);
    save(*r);
  }
  for (const auto& id : rep.extras_released) {
    MORPHEUS_CHECK(plan_.removeExtrasFrom(id, now).isOk(), "releasing extras");
  }
  std::vector<PlannedReservation> removed;
  if (recompute()) {
    auto all = plan_.reservations();
    for (auto it = all.rbegin(); it != all.rend(); ++it) {
      const PlannedReservation* r = *it;
      if (r->def.period.count() != 0) continue;
      bool hit = false;
      for (const auto& a : r->placement.allocations) {
        hit = hit || touches(plan_.stepFloor(a.start), plan_.stepFloor(a.end));
      }
      if (!hit) continue;
      save(*r);
      removed.push_back(*r);
      MORPHEUS_CHECK(plan_.remove(r->id).isOk(), "removing a one-off");
      if (!recompute()) break;
    }
  }
  // Re-plan the removed one-offs oldest first on the residual capacity.
  std::reverse(removed.begin(), removed.end());
  std::vector<const PlannedReservation*> unplaced;
  for (const auto& r : removed) {
    Result<Placement> p = propose(r.id, r.def, now, nullptr);
    if (p.isOk() && plan_.add(r.id, r.def, p.value(), r.accepted_seq).isOk()) {
      rep.replanned.push_back(r.id);
    } else {
      unplaced.push_back(&r);
    }
  }
  // An acknowledged reservation is never deleted by the system: what found no
  // new placement keeps its old one, over capacity, and is reported at risk.
  for (const PlannedReservation* r : unplaced) {
    MORPHEUS_CHECK(plan_.add(r->id, r->def, r->placement, r->accepted_seq).isOk(),
                   "keeping the placement of " + r->id.value());
    rep.at_risk.push_back(r->id);
  }
  return rep;
}

Result<int64_t> Planner::setExtra(const ReservationId& id, const Resource& unit, int64_t max_count,
                                  TimePoint from, TimePoint to, TimePoint now, std::string* limit) {
  if (plan_.find(id) == nullptr) return notFound("reservation " + id.value());
  if (unit.anyNegative() || unit.isZero()) {
    return invalidArgument("unit", "must be non-negative and non-zero");
  }
  if (max_count <= 0) return invalidArgument("count", "must be > 0");
  if (from < now - options_.step) return invalidArgument("from", "must not be in the past");
  if (to <= from) return invalidArgument("to", "must be after from");
  if (to > now + options_.one_off_horizon) {
    return invalidArgument("to", "beyond the one-off planning horizon");
  }
  MORPHEUS_RETURN_IF_ERROR(plan_.removeExtrasFrom(id, from));
  int64_t n = max_count;
  for (int64_t s = plan_.stepFloor(from); s < plan_.stepCeil(to) && n > 0; ++s) {
    Resource load = plan_.loadAtStep(s);
    Resource room = plan_.capacity() - load;
    int64_t fit = std::min(n, room.countFitting(unit));
    if (fit < n) {
      n = fit;
      if (limit != nullptr) {
        *limit = "plan room at " + iso(plan_.stepTime(s)) + " allows " + std::to_string(fit) +
                 " (load " + load.toString() + ", capacity " + plan_.capacity().toString() + ")";
      }
    }
  }
  if (n > 0) MORPHEUS_RETURN_IF_ERROR(plan_.addExtra(id, unit * n, from, to));
  return n;
}

Resource Planner::extraAt(const ReservationId& id, TimePoint t) const {
  const PlannedReservation* r = plan_.find(id);
  return r == nullptr ? Resource() : plan_.extraOf(*r, t);
}

Status Planner::removeExtra(const ReservationId& id, TimePoint from) {
  return plan_.removeExtrasFrom(id, from);
}

std::vector<ReservationId> Planner::expire(TimePoint now) {
  std::vector<ReservationId> gone;
  for (const PlannedReservation* r : plan_.reservations()) {
    if (r->def.period.count() == 0 && r->def.deadline <= now) gone.push_back(r->id);
  }
  for (const auto& id : gone) MORPHEUS_CHECK(plan_.remove(id).isOk(), "expiring " + id.value());
  plan_.trimBefore(plan_.stepFloor(now));
  return gone;
}

const Placement* Planner::placement(const ReservationId& id) const {
  const PlannedReservation* r = plan_.find(id);
  return r == nullptr ? nullptr : &r->placement;
}

std::vector<PlacementSummary> Planner::placements() const {
  std::vector<PlacementSummary> out;
  for (const PlannedReservation* r : plan_.reservations()) {
    out.push_back({r->id, &r->def, &r->placement});
  }
  return out;
}

}  // namespace morpheus::planner
