#include <algorithm>
#include <cmath>
#include <sstream>

#include "reprovision/policy.h"

namespace morpheus::reprovision {

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

  // Morpheus §7: when demand (used + pending) exceeds the skyline at t, ask
  // for min(demand - skyline(t), rho * max(skyline over R_recent)) for T.
  std::optional<ReprovisionDecision> decide(const ReprovisionInput& in) const override {
    int64_t demand = in.used_containers + in.pending_containers;
    int64_t planned = in.skyline_now;
    if (demand <= planned) return std::nullopt;
    int64_t recent_max = in.skyline_now;
    for (int64_t s : in.skyline_recent) recent_max = std::max(recent_max, s);
    auto cap = static_cast<int64_t>(std::floor(o_.rho * static_cast<double>(recent_max)));
    int64_t want = demand - planned;
    int64_t extra = std::min(want, cap);
    int64_t affordable = capByBudget(extra, o_.extension, in.budget_remaining_container_ms);
    std::ostringstream why;
    why << "demand " << demand << " > planned " << planned << "; rho cap " << cap;
    if (affordable < extra) why << "; budget allows " << affordable;
    if (affordable <= 0) return std::nullopt;
    return ReprovisionDecision{affordable, o_.extension, why.str()};
  }

 private:
  MorpheusDraOptions o_;
};

class Jockey final : public ReprovisionPolicy {
 public:
  explicit Jockey(JockeyOptions o) : o_(o) {}
  std::string name() const override { return "jockey"; }

  std::optional<ReprovisionDecision> decide(const ReprovisionInput& in) const override {
    double progress = std::clamp(in.progress, 0.0, 1.0);
    // Total work: the history's (skyline area), or what the run shows so far
    // when that is larger (work done / progress).
    double total = static_cast<double>(in.total_work_container_ms);
    if (progress >= 0.05 && in.work_done_container_ms > 0) {
      total = std::max(total, static_cast<double>(in.work_done_container_ms) / progress);
    }
    double remaining_work = total * (1.0 - progress);
    if (remaining_work <= 0) return std::nullopt;
    double left = static_cast<double>((in.deadline - in.now).count()) / (1.0 + o_.slack);
    double s = static_cast<double>(in.critical_path_remaining.count());
    int64_t current = in.skyline_now + in.extra_now;
    int64_t demand_cap =
        std::max<int64_t>(0, in.used_containers + in.pending_containers - in.skyline_now);
    int64_t needed;
    std::ostringstream why;
    if (left - s <= 0) {
      // Even infinite parallelism cannot make it: ask for all the job can use.
      needed = in.skyline_now + demand_cap;
      why << "critical path " << s / 1000 << " s exceeds time left " << left / 1000 << " s";
    } else {
      needed = static_cast<int64_t>(std::ceil(remaining_work / (left - s)));
      why << "remaining work " << static_cast<int64_t>(remaining_work) / 1000
          << " container-s, critical path " << static_cast<int64_t>(s) / 1000 << " s, needs "
          << needed << " containers to finish with slack " << o_.slack;
    }
    int64_t extra = std::max<int64_t>(0, needed - in.skyline_now);
    if (current > 0 && static_cast<double>(std::llabs(needed - current)) <=
                           o_.dead_zone * static_cast<double>(current)) {
      // Dead zone: keep what is held (avoid oscillating around the plan).
      extra = in.extra_now;
      why << "; within the dead zone of " << current << ", kept";
    }
    extra = std::min({extra, demand_cap, o_.max_extra_containers});
    extra = capByBudget(extra, o_.extension, in.budget_remaining_container_ms);
    if (extra <= 0) return std::nullopt;
    return ReprovisionDecision{extra, o_.extension, why.str()};
  }

 private:
  JockeyOptions o_;
};

}  // namespace

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
