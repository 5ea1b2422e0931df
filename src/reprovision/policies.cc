#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>
#include <set>
#include <sstream>

#include "reprovision/policy.h"

namespace morpheus::reprovision {

namespace {

std::vector<Resource> plannedWindow(const std::function<Resource(TimePoint)>& planned_at,
                                    TimePoint end, TimePoint instance_start, Millis recent,
                                    Millis step) {
  std::vector<Resource> out;
  for (Millis back = recent; back > Millis(0); back -= step) {
    const TimePoint t = end - back;
    out.push_back(t < instance_start ? Resource() : planned_at(t));
  }
  out.push_back(planned_at(end));
  return out;
}

}  // namespace

std::vector<Resource> recentPlanned(const std::function<Resource(TimePoint)>& planned_at,
                                    TimePoint now, TimePoint instance_start, TimePoint instance_end,
                                    Millis recent, Millis step) {
  std::vector<Resource> out = plannedWindow(planned_at, now, instance_start, recent, step);
  if (step <= Millis(0) || now >= instance_end ||
      std::any_of(out.begin(), out.end(), [](const Resource& r) { return !r.isZero(); })) {
    return out;
  }
  for (TimePoint t = now - recent - step; t >= instance_start; t -= step) {
    if (!planned_at(t).isZero()) return plannedWindow(planned_at, t, instance_start, recent, step);
  }
  return out;
}

namespace {

// Caps `extra` so that extra * duration fits the remaining budget.
int64_t capByBudget(int64_t extra, Millis duration, int64_t budget_container_ms) {
  if (duration.count() <= 0) return 0;
  return std::min(extra, std::max<int64_t>(0, budget_container_ms / duration.count()));
}

class MorpheusDra final : public ReprovisionPolicy {
 public:
  explicit MorpheusDra(MorpheusDraOptions o) : o_(o) {}
  std::string name() const override { return "morpheus-dra"; }

  // Morpheus §7: a job that is not ahead of its plan (cumulative usage <=
  // cumulative guarantee) and whose demand (used + pending) exceeds the
  // skyline at t asks for min(demand - skyline(t), rho * max(skyline over
  // R_recent)) for T.
  std::optional<ReprovisionDecision> decide(const ReprovisionInput& in) const override {
    if (!o_.grant_when_ahead && aheadOfPlan(in)) return std::nullopt;
    const int64_t demand = in.used_containers + in.pending_containers;
    const int64_t planned = in.skyline_now;
    if (demand <= planned) return std::nullopt;
    const int64_t want = demand - planned;
    int64_t recent_max = in.skyline_now;
    for (int64_t s : in.skyline_recent) recent_max = std::max(recent_max, s);
    auto cap = static_cast<int64_t>(std::floor(o_.rho * static_cast<double>(recent_max)));
    int64_t extra = std::min(want, cap);
    int64_t affordable = capByBudget(extra, o_.extension, in.budget_remaining_container_ms);
    std::ostringstream why;
    why << "demand " << demand << " > planned " << planned << "; rho cap " << cap;
    if (affordable < extra) why << "; budget allows " << affordable;
    if (affordable <= 0) return std::nullopt;
    return ReprovisionDecision{affordable, o_.extension, why.str(), planned + affordable};
  }

 private:
  MorpheusDraOptions o_;
};

// Stage durations for the simulator: the recorded ones, unknown stages at the
// mean of the known ones. nullopt when none is known.
std::optional<std::vector<int64_t>> stageDurations(const std::vector<StageState>& stages) {
  int64_t sum = 0, known = 0;
  for (const auto& s : stages) {
    if (s.task_duration.count() > 0) {
      sum += s.task_duration.count();
      known++;
    }
  }
  if (known == 0) return std::nullopt;
  std::vector<int64_t> d;
  d.reserve(stages.size());
  for (const auto& s : stages) {
    d.push_back(s.task_duration.count() > 0 ? s.task_duration.count() : sum / known);
  }
  return d;
}

// Jockey's offline simulator (EuroSys'12 §4.1) over the remaining tasks:
// event-driven list scheduling of identical tasks per stage.
class RemainingSim {
 public:
  RemainingSim(const std::vector<StageState>& stages, std::vector<int64_t> dur)
      : stages_(stages), dur_(std::move(dur)), n_(stages.size()) {}

  std::optional<Millis> run(int64_t allocation) {
    std::vector<int64_t> unfinished(n_), pending(n_), deps_left(n_, 0);
    std::vector<std::vector<size_t>> dependents(n_);
    for (size_t s = 0; s < n_; s++) {
      const auto& st = stages_[s];
      int64_t running = static_cast<int64_t>(st.running.size());
      unfinished[s] = std::max<int64_t>(0, st.tasks - st.completed);
      pending[s] = std::max<int64_t>(0, unfinished[s] - running);
      for (size_t d : st.deps) {
        if (d >= n_ || d == s) return std::nullopt;
        dependents[d].push_back(s);
      }
    }
    for (size_t s = 0; s < n_; s++) {
      for (size_t d : stages_[s].deps) deps_left[s] += unfinished[d] > 0 ? 1 : 0;
    }
    // Running tasks hold their containers; new ones start while busy < a.
    using Event = std::pair<int64_t, size_t>;  // (finish ms, stage)
    std::priority_queue<Event, std::vector<Event>, std::greater<>> running;
    for (size_t s = 0; s < n_; s++) {
      for (Millis e : stages_[s].running)
        running.push({std::max<int64_t>(0, dur_[s] - e.count()), s});
    }
    std::set<size_t> ready;
    for (size_t s = 0; s < n_; s++) {
      if (deps_left[s] == 0 && pending[s] > 0) ready.insert(s);
    }
    int64_t now = 0;
    for (;;) {
      while (!ready.empty() && static_cast<int64_t>(running.size()) < allocation) {
        size_t s = *ready.begin();
        running.push({now + dur_[s], s});
        if (--pending[s] == 0) ready.erase(ready.begin());
      }
      if (running.empty()) break;
      auto [t, s] = running.top();
      running.pop();
      now = t;
      if (--unfinished[s] > 0) continue;
      for (size_t u : dependents[s]) {
        if (--deps_left[u] == 0 && pending[u] > 0) ready.insert(u);
      }
    }
    for (int64_t u : unfinished) {
      if (u > 0) return std::nullopt;  // a cycle: some stage never became ready
    }
    return Millis(now);
  }

 private:
  const std::vector<StageState>& stages_;
  const std::vector<int64_t> dur_;
  const size_t n_;
};

int64_t remainingTasks(const std::vector<StageState>& stages) {
  int64_t n = 0;
  for (const auto& s : stages) n += std::max<int64_t>(0, s.tasks - s.completed);
  return n;
}

class Jockey final : public ReprovisionPolicy {
 public:
  explicit Jockey(JockeyOptions o) : o_(o) {}
  std::string name() const override { return "jockey"; }

  // Jockey §4.3 control loop; see JockeyOptions.
  std::optional<ReprovisionDecision> decide(const ReprovisionInput& in) const override {
    auto dur = stageDurations(in.stages);
    int64_t most = remainingTasks(in.stages);
    if (!dur || most <= 0) return std::nullopt;
    RemainingSim sim(in.stages, *dur);
    const double left = static_cast<double>((in.deadline - in.now).count());
    auto withSlack = [&](int64_t a) -> std::optional<double> {
      auto c = sim.run(a);
      if (!c) return std::nullopt;
      return static_cast<double>(c->count()) * (1.0 + o_.slack);
    };
    auto fastest = withSlack(most);
    if (!fastest) return std::nullopt;
    // Allocations are totals (plan, skyline and grants count the AMs); the
    // simulator runs tasks on what the AMs leave.
    const int64_t am = std::max<int64_t>(0, in.am_containers);
    const int64_t prev = in.previous_allocation > 0
                             ? std::max(in.previous_allocation, in.skyline_now)
                             : in.skyline_now + in.extra_now;
    std::ostringstream why;
    why << "progress " << static_cast<int>(std::lround(100 * jockeyProgress(in.stages)))
        << "% of task time";
    int64_t target;
    auto at_prev = prev - am > 0 ? withSlack(prev - am) : std::nullopt;
    if (at_prev && *at_prev <= left &&
        *at_prev >= left - static_cast<double>(o_.dead_zone.count())) {
      target = prev;
      why << "; with " << prev - am << " task containers predicted to finish in "
          << static_cast<int64_t>(*at_prev) / 1000 << " s (slack " << o_.slack
          << ") within the dead zone before the deadline in " << static_cast<int64_t>(left) / 1000
          << " s, kept";
    } else {
      int64_t raw = am + rawAllocation(sim, most, *fastest, left, why);
      target = smooth(prev, raw);
      if (target != raw) why << "; hysteresis from " << prev << ": " << target;
    }
    int64_t demand_cap =
        std::max<int64_t>(0, in.used_containers + in.pending_containers - in.skyline_now);
    int64_t extra = std::min({target - in.skyline_now, demand_cap, o_.max_extra_containers});
    extra = capByBudget(extra, o_.extension, in.budget_remaining_container_ms);
    if (extra <= 0) return std::nullopt;
    return ReprovisionDecision{extra, o_.extension, why.str(), target};
  }

 private:
  // The least a whose predicted completion (with slack) meets the deadline;
  // `most` (every remaining task at once) when none does. C(p, a) is taken
  // as non-increasing in a (binary search); list-scheduling anomalies may
  // make the answer a meeting allocation that is not the least.
  int64_t rawAllocation(RemainingSim& sim, int64_t most, double fastest, double left,
                        std::ostringstream& why) const {
    if (fastest > left) {
      why << "; cannot meet the deadline in " << static_cast<int64_t>(left) / 1000
          << " s even with " << most << " task containers (" << static_cast<int64_t>(fastest) / 1000
          << " s with slack): asks for them";
      return most;
    }
    int64_t lo = 1, hi = most;
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      auto c = sim.run(mid);
      if (c && static_cast<double>(c->count()) * (1.0 + o_.slack) <= left) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    why << "; " << lo << " task containers predicted to finish in "
        << static_cast<int64_t>(sim.run(lo)->count()) / 1000 << " s (x" << 1.0 + o_.slack
        << " slack) before the deadline in " << static_cast<int64_t>(left) / 1000 << " s";
    return lo;
  }

  // Jockey's hysteresis: a step of `hysteresis` from prev towards raw,
  // rounded away from prev so that any needed change moves by >= 1.
  int64_t smooth(int64_t prev, int64_t raw) const {
    double step = o_.hysteresis * static_cast<double>(raw - prev);
    auto moved = static_cast<int64_t>(step > 0 ? std::ceil(step) : std::floor(step));
    return prev + moved;
  }

  JockeyOptions o_;
};

}  // namespace

double jockeyProgress(const std::vector<StageState>& stages) {
  auto dur = stageDurations(stages);
  if (!dur) return 1.0;
  double done = 0, total = 0;
  for (size_t s = 0; s < stages.size(); s++) {
    const double d = static_cast<double>((*dur)[s]);
    total += static_cast<double>(stages[s].tasks) * d;
    done += static_cast<double>(std::min(stages[s].completed, stages[s].tasks)) * d;
    for (Millis e : stages[s].running) done += std::min(static_cast<double>(e.count()), d);
  }
  return total <= 0 ? 1.0 : std::clamp(done / total, 0.0, 1.0);
}

std::optional<Millis> jockeyRemaining(const std::vector<StageState>& stages, int64_t allocation) {
  auto dur = stageDurations(stages);
  if (!dur || allocation < 1) return std::nullopt;
  return RemainingSim(stages, std::move(*dur)).run(allocation);
}

bool aheadOfPlan(const ReprovisionInput& in) {
  return in.used_container_ms_so_far > in.guaranteed_container_ms_so_far;
}

std::unique_ptr<ReprovisionPolicy> makeMorpheusDra(const MorpheusDraOptions& opts) {
  return std::make_unique<MorpheusDra>(opts);
}

std::unique_ptr<ReprovisionPolicy> makeJockey(const JockeyOptions& opts) {
  return std::make_unique<Jockey>(opts);
}

Result<std::unique_ptr<ReprovisionPolicy>> makePolicy(const std::string& name,
                                                      const MorpheusDraOptions& dra,
                                                      const JockeyOptions& jockey,
                                                      const std::string& field) {
  if (name == "morpheus-dra") return makeMorpheusDra(dra);
  if (name == "jockey") return makeJockey(jockey);
  return invalidArgument(field,
                         "unknown reprovisioning policy '" + name + "' (morpheus-dra, jockey)");
}

}  // namespace morpheus::reprovision
