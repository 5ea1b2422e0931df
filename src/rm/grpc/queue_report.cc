#include "rm/grpc/queue_report.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>

#include "common/wire.h"

namespace morpheus::rm {

namespace {

struct AppCounts {
  int32_t running = 0;
  int32_t pending = 0;
};

// Counts per queue name: an ad-hoc app counts for its leaf and every
// ancestor path, a reservation-bound app for its reservation id.
std::map<std::string, AppCounts> countApps(const AppManager& apps) {
  std::map<std::string, AppCounts> out;
  for (const auto& a : apps.list({AppState::kSubmitted, AppState::kRunning}, "")) {
    auto bump = [&](const std::string& q) {
      auto& c = out[q];
      (a.state == AppState::kRunning ? c.running : c.pending)++;
    };
    if (!a.reservation.empty()) {
      bump(a.reservation.value());
      continue;
    }
    for (size_t dot = a.queue.find('.'); dot != std::string::npos;
         dot = a.queue.find('.', dot + 1)) {
      bump(a.queue.substr(0, dot));
    }
    bump(a.queue);
  }
  return out;
}

const char* kindOf(const sched::QueueView& q) {
  if (!q.ref.isReservation()) return q.leaf ? "adhoc" : "adhoc-parent";
  return q.kind == sched::ReservationKind::kPeriodic ? "reservation-periodic"
                                                     : "reservation-oneoff";
}

}  // namespace

std::vector<v1::QueueReport> queueReports(const RmRuntime& runtime, const AppManager& apps,
                                          const ReservationManager* reservations, TimePoint now) {
  std::map<std::string, AppCounts> counts = countApps(apps);
  const QueueLimits limits = apps.limits();
  std::vector<v1::QueueReport> out;
  std::set<ReservationId> seen;
  for (const auto& q : runtime.queues()) {
    v1::QueueReport r;
    r.set_name(q.ref.isReservation() ? q.ref.reservationId().value() : q.ref.adhocPath());
    r.set_kind(kindOf(q));
    r.set_weight(q.weight);
    toProto(q.guaranteed, r.mutable_guaranteed());
    toProto(q.used, r.mutable_used());
    toProto(q.pending, r.mutable_pending());
    const AppCounts& c = counts[r.name()];
    r.set_running_apps(c.running);
    r.set_pending_apps(c.pending);
    if (q.max_resources) toProto(*q.max_resources, r.mutable_max_resources());
    if (!q.ref.isReservation()) {
      auto lim = limits.max_running_apps.find(r.name());
      if (lim != limits.max_running_apps.end())
        r.set_max_running_apps(static_cast<int32_t>(std::min<int64_t>(lim->second, INT32_MAX)));
    }
    if (q.ref.isReservation()) seen.insert(q.ref.reservationId());
    out.push_back(std::move(r));
  }
  if (reservations == nullptr) return out;
  for (const auto& id : reservations->ids()) {
    if (seen.count(id)) continue;
    v1::QueueReport r;
    r.set_name(id.value());
    r.set_kind(reservations->isPeriodic(id) ? "reservation-periodic" : "reservation-oneoff");
    r.set_weight(1.0);
    toProto(reservations->guaranteedAt(id, now), r.mutable_guaranteed());
    toProto(Resource(), r.mutable_used());
    toProto(Resource(), r.mutable_pending());
    const AppCounts& c = counts[r.name()];
    r.set_running_apps(c.running);
    r.set_pending_apps(c.pending);
    out.push_back(std::move(r));
  }
  // Reservation queues in id order: the scheduler's and the plan's merged.
  auto first_res = std::find_if(out.begin(), out.end(), [](const v1::QueueReport& r) {
    return r.kind().rfind("reservation", 0) == 0;
  });
  std::sort(first_res, out.end(),
            [](const v1::QueueReport& a, const v1::QueueReport& b) { return a.name() < b.name(); });
  return out;
}

}  // namespace morpheus::rm
