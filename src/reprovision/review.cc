#include "reprovision/review.h"

#include <algorithm>
#include <utility>

namespace morpheus::reprovision {

int64_t Grant::refundAt(TimePoint now) const {
  return activeAt(now) ? count * (until - now).count() : 0;
}

int64_t InstanceBudget::remaining(int64_t at_instance, int64_t refund) const {
  const int64_t used = instance == at_instance ? used_container_ms : 0;
  return std::max<int64_t>(0, budget_container_ms - used + refund);
}

void InstanceBudget::giveBack(int64_t refund) {
  used_container_ms = std::max<int64_t>(0, used_container_ms - refund);
}

SwapQuote quoteSwap(InstanceBudget& budget, const Grant& grant, int64_t instance, int64_t count,
                    Millis duration, TimePoint now) {
  if (budget.instance != instance) {
    budget.instance = instance;
    budget.used_container_ms = 0;
  }
  SwapQuote q;
  q.refund = grant.refundAt(now);
  q.affordable =
      std::max<int64_t>(0, budget.budget_container_ms - budget.used_container_ms + q.refund) /
      duration.count();
  q.want = std::min(count, q.affordable);
  return q;
}

void settleSwap(InstanceBudget& budget, Grant& grant, const SwapQuote& q, int64_t granted,
                Millis duration, TimePoint now) {
  budget.used_container_ms =
      std::max<int64_t>(0, budget.used_container_ms - q.refund + granted * duration.count());
  grant = Grant{granted, now + duration};
}

void releaseGrant(InstanceBudget& budget, Grant& grant, TimePoint now) {
  budget.giveBack(grant.refundAt(now));
  grant = Grant{};
}

ReprovisionInput reviewInput(const ReservationId& reservation, TimePoint now, Millis step,
                             Millis ahead_window, ReviewView view, ReviewState& state) {
  if (state.instance != view.instance) state = ReviewState{view.instance, 0, 0, 0, {}};
  const Resource& unit = view.unit;
  ReprovisionInput in;
  in.reservation = reservation;
  in.now = now;
  in.step = step;
  in.used_containers = view.used.countCovering(unit);
  in.pending_containers = view.pending.countCovering(unit);
  in.am_containers = view.am.countCovering(unit);
  in.skyline_now = view.planned_now.countCovering(unit);
  in.extra_now = view.extra_now.countCovering(unit);
  for (const auto& r : view.planned_recent) in.skyline_recent.push_back(r.countCovering(unit));
  in.budget_remaining_container_ms = view.budget_remaining_container_ms;
  in.deadline = view.deadline;
  in.stages = std::move(view.stages);
  in.previous_allocation = state.allocation;
  const int64_t used = in.used_containers * step.count();
  const int64_t guaranteed = (in.skyline_now + in.extra_now) * step.count();
  state.used_ms += used;
  state.guaranteed_ms += guaranteed;
  if (ahead_window > Millis(0) && step > Millis(0)) {
    const auto keep = static_cast<size_t>((ahead_window.count() + step.count() - 1) / step.count());
    state.recent.emplace_back(used, guaranteed);
    while (state.recent.size() > keep) {
      state.used_ms -= state.recent.front().first;
      state.guaranteed_ms -= state.recent.front().second;
      state.recent.pop_front();
    }
  }
  in.used_container_ms_so_far = state.used_ms;
  in.guaranteed_container_ms_so_far = state.guaranteed_ms;
  return in;
}

std::optional<ReprovisionDecision> decideReview(const ReprovisionPolicy& policy,
                                                const ReprovisionInput& in, ReviewState& state) {
  auto decision = policy.decide(in);
  state.allocation = decision ? decision->allocation : 0;
  return decision;
}

}  // namespace morpheus::reprovision
