#include "planner/plan.h"

#include <algorithm>

namespace morpheus::planner {

namespace {
int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t floorMod(int64_t a, int64_t b) { return a - floorDiv(a, b) * b; }
}  // namespace

Plan::Plan(const PlanOptions& options, const Resource& capacity)
    : options_(options), step_ms_(options.step.count()), lcm_steps_(0), capacity_(capacity) {
  MORPHEUS_CHECK(step_ms_ > 0, "plan step must be positive");
  MORPHEUS_CHECK(options.lcm.count() > 0 && options.lcm.count() % step_ms_ == 0,
                 "plan LCM must be a positive multiple of the step");
  lcm_steps_ = options.lcm.count() / step_ms_;
}

ReservationTable::ReservationTable(const ReservationTable& other) : by_id_(other.by_id_) {
  reindex();
}

ReservationTable& ReservationTable::operator=(const ReservationTable& other) {
  if (this == &other) return *this;
  by_id_ = other.by_id_;
  reindex();
  return *this;
}

void ReservationTable::reindex() {
  order_.clear();
  for (const auto& [id, r] : by_id_) order_.emplace(std::make_pair(r.accepted_seq, id), &r);
}

const PlannedReservation* ReservationTable::find(const ReservationId& id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &it->second;
}

PlannedReservation* ReservationTable::find(const ReservationId& id) {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &it->second;
}

void ReservationTable::add(PlannedReservation r) {
  const ReservationId id = r.id;
  const uint64_t seq = r.accepted_seq;
  auto [it, added] = by_id_.emplace(id, std::move(r));
  MORPHEUS_CHECK(added, "reservation " + id.value() + " added twice");
  order_.emplace(std::make_pair(seq, id), &it->second);
}

void ReservationTable::erase(const ReservationId& id) {
  auto it = by_id_.find(id);
  MORPHEUS_CHECK(it != by_id_.end(), "erasing unknown reservation " + id.value());
  order_.erase(std::make_pair(it->second.accepted_seq, id));
  by_id_.erase(it);
}

std::vector<const PlannedReservation*> ReservationTable::inOrder() const {
  std::vector<const PlannedReservation*> out;
  out.reserve(order_.size());
  for (const auto& [key, r] : order_) out.push_back(r);
  return out;
}

int64_t Plan::stepFloor(TimePoint t) const { return floorDiv(toEpochMs(t), step_ms_); }
int64_t Plan::stepCeil(TimePoint t) const { return -floorDiv(-toEpochMs(t), step_ms_); }

Resource Plan::periodicAtStep(int64_t s) const { return periodic_.at(floorMod(s, lcm_steps_)); }

Resource Plan::loadAtStep(int64_t s) const { return periodicAtStep(s) + one_off_.at(s); }

Resource Plan::loadAt(TimePoint t) const { return loadAtStep(stepFloor(t)); }

Resource Plan::periodicLoadAt(TimePoint t) const { return periodicAtStep(stepFloor(t)); }

std::vector<Resource> Plan::periodicDense() const {
  std::vector<Resource> out(static_cast<size_t>(lcm_steps_));
  periodic_.fill(0, lcm_steps_, out, 0);
  return out;
}

void Plan::oneOffDense(int64_t from, int64_t to, std::vector<Resource>& out) const {
  out.assign(static_cast<size_t>(std::max<int64_t>(0, to - from)), Resource());
  one_off_.fill(from, to, out, 0);
}

std::vector<AllocationInterval> Plan::planLoad(TimePoint from, TimePoint to) const {
  std::vector<AllocationInterval> out;
  if (from >= to) return out;
  int64_t s0 = stepFloor(from), s1 = stepCeil(to);
  std::vector<Resource> periodic = periodicDense();
  std::vector<Resource> one;
  oneOffDense(s0, s1, one);
  for (int64_t s = s0; s < s1; ++s) {
    Resource v =
        periodic[static_cast<size_t>(floorMod(s, lcm_steps_))] + one[static_cast<size_t>(s - s0)];
    TimePoint a = std::max(from, stepTime(s)), b = std::min(to, stepTime(s + 1));
    if (!out.empty() && out.back().resource == v) {
      out.back().end = b;
    } else {
      out.push_back({a, b, v});
    }
  }
  return out;
}

const PlannedReservation* Plan::find(const ReservationId& id) const {
  return reservations_.find(id);
}

std::vector<const PlannedReservation*> Plan::reservations() const {
  return reservations_.inOrder();
}

std::optional<InstanceWindow> Plan::instanceAt(const ReservationId& id, TimePoint t) const {
  const PlannedReservation* r = find(id);
  if (r == nullptr) return std::nullopt;
  return instanceOf(*r, t);
}

InstanceWindow Plan::instanceOf(const PlannedReservation& r, TimePoint t) const {
  if (r.def.period.count() == 0) return InstanceWindow{0, r.def.arrival, r.def.deadline};
  int64_t p = r.def.period.count();
  int64_t k = floorDiv(toEpochMs(t) - toEpochMs(r.def.arrival), p);
  return InstanceWindow{k, r.def.arrival + Millis(k * p), r.def.deadline + Millis(k * p)};
}

Resource Plan::guaranteedAt(const ReservationId& id, TimePoint t) const {
  const PlannedReservation* r = find(id);
  if (r == nullptr) return Resource();
  return guaranteedOf(*r, t);
}

Resource Plan::guaranteedOf(const PlannedReservation& r, TimePoint t) const {
  Resource g = placedOf(r, t);
  if (!r.extras.empty()) g += extraOf(r, t);
  return g;
}

Resource Plan::placedOf(const PlannedReservation& r, TimePoint t) const {
  TimePoint tt = t;
  if (r.def.period.count() > 0) {
    int64_t p = r.def.period.count();
    int64_t k = floorDiv(toEpochMs(t) - toEpochMs(r.def.arrival), p);
    tt = t - Millis(k * p);
  }
  Resource g;
  const auto& allocs = r.placement.allocations;
  auto it = std::upper_bound(allocs.begin(), allocs.end(), tt,
                             [](TimePoint v, const AllocationInterval& a) { return v < a.start; });
  if (it != allocs.begin() && tt < std::prev(it)->end) g = std::prev(it)->resource;
  return g;
}

Resource Plan::extraOf(const PlannedReservation& r, TimePoint t) const {
  Resource out;
  if (r.extras.empty()) return out;
  const int64_t s = stepFloor(t);
  for (const auto& e : r.extras) {
    if (e.start_step <= s && s < e.end_step) out += e.resource;
  }
  return out;
}

PlanningProblem Plan::problemFor(const ReservationDefinition& def, TimePoint now) const {
  PlanningProblem p;
  p.def = &def;
  p.step = options_.step;
  p.capacity = capacity_;
  bool periodic = def.period.count() > 0;
  TimePoint arrival = periodic ? def.arrival : std::max(def.arrival, now);
  p.first_step = stepCeil(arrival);
  p.window = std::max<int64_t>(0, stepFloor(def.deadline) - p.first_step);
  for (const auto& s : def.stages) {
    p.duration.push_back((s.duration.count() + step_ms_ - 1) / step_ms_);
  }
  double mid_ms = (static_cast<double>(toEpochMs(def.arrival)) + toEpochMs(def.deadline)) / 2.0;
  p.center = (mid_ms - static_cast<double>(p.first_step * step_ms_)) / step_ms_;
  size_t w = static_cast<size_t>(p.window);
  p.load.assign(w, Resource());
  if (w == 0) return p;
  if (!periodic) {
    std::vector<Resource> per = periodicDense();
    one_off_.fill(p.first_step, p.first_step + p.window, p.load, 0);
    for (size_t j = 0; j < w; ++j) {
      p.load[j] +=
          per[static_cast<size_t>(floorMod(p.first_step + static_cast<int64_t>(j), lcm_steps_))];
    }
    return p;
  }
  // Periodic: strict priority over one-offs (Morpheus §6), so only the
  // periodic load counts; the max over all instances in the LCM.
  std::vector<Resource> comb = periodicDense();
  int64_t ps = def.period.count() / step_ms_;
  int64_t n = std::max<int64_t>(1, lcm_steps_ / std::max<int64_t>(1, ps));
  for (size_t j = 0; j < w; ++j) {
    int64_t base = p.first_step + static_cast<int64_t>(j);
    Resource m = comb[static_cast<size_t>(floorMod(base, lcm_steps_))];
    for (int64_t k = 1; k < n; ++k) {
      m = Resource::max(m, comb[static_cast<size_t>(floorMod(base + k * ps, lcm_steps_))]);
    }
    p.load[j] = std::move(m);
  }
  return p;
}

void Plan::applyPeriodic(int64_t start_step, int64_t end_step, const Resource& r) {
  int64_t len = end_step - start_step;
  if (len <= 0) return;
  MORPHEUS_CHECK(len <= lcm_steps_, "periodic allocation longer than the LCM");
  int64_t o = floorMod(start_step, lcm_steps_);
  if (o + len <= lcm_steps_) {
    periodic_.add(o, o + len, r);
  } else {
    periodic_.add(o, lcm_steps_, r);
    periodic_.add(0, o + len - lcm_steps_, r);
  }
}

void Plan::applyOneOff(int64_t start_step, int64_t end_step, const Resource& r) {
  one_off_.add(std::max(start_step, trimmed_before_), end_step, r);
}

void Plan::trimBefore(int64_t s) {
  if (s <= trimmed_before_) return;
  trimmed_before_ = s;
  one_off_.eraseBefore(s);
}

void Plan::apply(const ReservationDefinition& def, const Placement& placement, int sign) {
  int64_t ps = def.period.count() / step_ms_;
  for (const auto& a : placement.allocations) {
    int64_t s = stepFloor(a.start), e = stepFloor(a.end);
    Resource r = a.resource * sign;
    if (def.period.count() == 0) {
      applyOneOff(s, e, r);
    } else {
      int64_t n = lcm_steps_ / ps;
      for (int64_t k = 0; k < n; ++k) applyPeriodic(s + k * ps, e + k * ps, r);
    }
  }
}

Status Plan::add(const ReservationId& id, const ReservationDefinition& def,
                 const Placement& placement, uint64_t accepted_seq) {
  if (reservations_.find(id) != nullptr) return alreadyExists("reservation " + id.value());
  if (placement.period != def.period) {
    return invalidArgument("placement.period", "does not match the definition's period");
  }
  if (def.period.count() % step_ms_ != 0 ||
      (def.period.count() > 0 && options_.lcm.count() % def.period.count() != 0)) {
    return invalidArgument("period", "must be a multiple of the step dividing the LCM");
  }
  TimePoint prev_end = fromEpochMs(INT64_MIN);
  for (size_t i = 0; i < placement.allocations.size(); ++i) {
    const auto& a = placement.allocations[i];
    const std::string f = "placement.allocations[" + std::to_string(i) + "]";
    if (toEpochMs(a.start) % step_ms_ != 0 || toEpochMs(a.end) % step_ms_ != 0) {
      return invalidArgument(f, "not aligned to the plan step");
    }
    if (a.start >= a.end || a.start < prev_end) {
      return invalidArgument(f, "intervals must be non-empty, sorted and disjoint");
    }
    if (a.start < def.arrival || a.end > def.deadline) {
      return invalidArgument(f, "outside [arrival, deadline)");
    }
    if (a.resource.anyNegative()) return invalidArgument(f + ".resource", "must not be negative");
    prev_end = a.end;
  }
  apply(def, placement, +1);
  if (def.period.count() == 0) displaceable_++;
  edits_++;
  reservations_.add(PlannedReservation{id, def, placement, accepted_seq, {}});
  return Status::ok();
}

Status Plan::remove(const ReservationId& id) {
  const PlannedReservation* r = reservations_.find(id);
  if (r == nullptr) return notFound("reservation " + id.value());
  apply(r->def, r->placement, -1);
  for (const auto& e : r->extras) applyOneOff(e.start_step, e.end_step, e.resource * -1);
  if (r->def.period.count() == 0 || !r->extras.empty()) displaceable_--;
  edits_++;
  reservations_.erase(id);
  return Status::ok();
}

Status Plan::addExtra(const ReservationId& id, const Resource& extra, TimePoint from,
                      TimePoint to) {
  PlannedReservation* r = reservations_.find(id);
  if (r == nullptr) return notFound("reservation " + id.value());
  Extra e{stepFloor(from), stepCeil(to), extra};
  if (e.start_step >= e.end_step || extra.isZero()) return Status::ok();
  applyOneOff(e.start_step, e.end_step, extra);
  if (r->def.period.count() != 0 && r->extras.empty()) displaceable_++;
  r->extras.push_back(std::move(e));
  return Status::ok();
}

Status Plan::removeExtrasFrom(const ReservationId& id, TimePoint from) {
  PlannedReservation* r = reservations_.find(id);
  if (r == nullptr) return notFound("reservation " + id.value());
  int64_t s = stepFloor(from);
  auto& extras = r->extras;
  for (auto& e : extras) {
    if (e.end_step <= s) continue;
    int64_t cut = std::max(e.start_step, s);
    applyOneOff(cut, e.end_step, e.resource * -1);
    e.end_step = cut;
  }
  const bool had = !extras.empty();
  extras.erase(std::remove_if(extras.begin(), extras.end(),
                              [](const Extra& e) { return e.start_step >= e.end_step; }),
               extras.end());
  if (r->def.period.count() != 0 && had && extras.empty()) displaceable_--;
  return Status::ok();
}

}  // namespace morpheus::planner
