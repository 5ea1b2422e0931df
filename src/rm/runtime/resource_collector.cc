#include "rm/runtime/resource_collector.h"

#include <map>
#include <utility>
#include <vector>

namespace morpheus::rm {

namespace {
double bytes(const Resource& r) { return static_cast<double>(r.memoryMib()) * kBytesPerMib; }

using Series = std::vector<std::pair<Labels, double>>;
}  // namespace

ResourceCollector::ResourceCollector(MetricsRegistry& metrics, const RmCore& core,
                                     const RmRuntime& runtime,
                                     const ReservationManager& reservations, Clock& clock)
    : m_(metrics),
      core_(core),
      runtime_(runtime),
      reservations_(reservations),
      clock_(clock),
      handle_(metrics.addCollector([this] { collect(); })) {}

void ResourceCollector::collect() {
  double rss_mib = 0, cpu = 0;
  for (const auto& n : core_.nodes(false)) {
    rss_mib += static_cast<double>(n.used_rss_mib);
    cpu += n.used_cpu_vcores;
  }
  m_.used_memory_bytes.set(rss_mib * kBytesPerMib);
  m_.used_vcores.set(cpu);

  RmRuntime::SchedulerTotals totals = runtime_.schedulerTotals();
  m_.allocated_memory_bytes.set(bytes(totals.allocated));
  m_.allocated_vcores.set(totals.allocated.vcores());
  m_.containers.set(static_cast<double>(totals.containers));
  m_.node_reservations.set(static_cast<double>(totals.reserved_nodes));

  // The plan's guarantees now, and the queue of each reservation.
  std::map<ReservationId, ReservationManager::Guaranteed> guaranteed;
  for (auto& g : reservations_.guaranteesAt(clock_.now())) guaranteed.emplace(g.id, std::move(g));
  Resource reserved;
  for (const auto& [id, g] : guaranteed) reserved += g.guaranteed;
  m_.reserved_memory_bytes.set(bytes(reserved));
  m_.reserved_vcores.set(reserved.vcores());

  Resource pending;
  int64_t pending_containers = 0;
  Series q_mem, q_vc, q_pmem, q_pvc, q_pc, q_apps;
  struct ReservationRow {
    std::string queue;
    Resource guaranteed, allocated, pending;
  };
  std::map<ReservationId, ReservationRow> rows;
  for (const auto& [id, g] : guaranteed) rows[id] = {g.queue, g.guaranteed, {}, {}};
  for (const auto& v : totals.queues) {
    if (v.ref.isReservation()) {
      // Apps bound to a reservation outside its window still hold and ask.
      pending += v.pending;
      pending_containers += v.pending_containers;
      auto [it, fresh] = rows.try_emplace(v.ref.reservationId());
      if (fresh) {
        auto rec = reservations_.get(v.ref.reservationId());
        it->second.queue = rec ? rec->def.queue : "";
      }
      it->second.allocated = v.used;
      it->second.pending = v.pending;
      continue;
    }
    // Leaves partition the ad-hoc apps: their sum is the ad-hoc demand.
    if (v.leaf) {
      pending += v.pending;
      pending_containers += v.pending_containers;
    }
    Labels l{{"queue", v.ref.adhocPath()}};
    q_mem.emplace_back(l, bytes(v.used));
    q_vc.emplace_back(l, v.used.vcores());
    q_pmem.emplace_back(l, bytes(v.pending));
    q_pvc.emplace_back(l, v.pending.vcores());
    q_pc.emplace_back(l, static_cast<double>(v.pending_containers));
    q_apps.emplace_back(l, v.apps);
  }
  m_.pending_memory_bytes.set(bytes(pending));
  m_.pending_vcores.set(pending.vcores());
  m_.pending_containers.set(static_cast<double>(pending_containers));
  m_.queue_allocated_memory_bytes.replaceAll(q_mem);
  m_.queue_allocated_vcores.replaceAll(q_vc);
  m_.queue_pending_memory_bytes.replaceAll(q_pmem);
  m_.queue_pending_vcores.replaceAll(q_pvc);
  m_.queue_pending_containers.replaceAll(q_pc);
  m_.queue_apps.replaceAll(q_apps);

  Series g_mem, g_vc, a_mem, a_vc, p_mem, p_vc;
  for (const auto& [id, r] : rows) {
    Labels l{{"reservation", id.value()}, {"queue", r.queue}};
    g_mem.emplace_back(l, bytes(r.guaranteed));
    g_vc.emplace_back(l, r.guaranteed.vcores());
    a_mem.emplace_back(l, bytes(r.allocated));
    a_vc.emplace_back(l, r.allocated.vcores());
    p_mem.emplace_back(l, bytes(r.pending));
    p_vc.emplace_back(l, r.pending.vcores());
  }
  m_.reservation_guaranteed_memory_bytes.replaceAll(g_mem);
  m_.reservation_guaranteed_vcores.replaceAll(g_vc);
  m_.reservation_allocated_memory_bytes.replaceAll(a_mem);
  m_.reservation_allocated_vcores.replaceAll(a_vc);
  m_.reservation_pending_memory_bytes.replaceAll(p_mem);
  m_.reservation_pending_vcores.replaceAll(p_vc);
}

}  // namespace morpheus::rm
